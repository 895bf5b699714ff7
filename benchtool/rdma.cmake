# The RDMA RC bulk transport of fabricmon-bench, included at the end of
# benchtool/CMakeLists.txt. It builds everywhere (its test drives a fake
# VerbsOps); the libibverbs calls themselves live in fabric_probe's seam.
target_sources(fabric_benchtool PRIVATE ${CMAKE_CURRENT_LIST_DIR}/rdma_rc.cc)
target_link_libraries(fabric_benchtool PUBLIC fabric_probe)
