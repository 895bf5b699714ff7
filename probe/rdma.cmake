# The RDMA (verbs) probe path, included at the end of probe/CMakeLists.txt.
# The seam, the clock conversion, the port list and the UD transport build
# everywhere (their tests drive a fake VerbsOps); only the libibverbs
# implementation of the seam needs rdma-core.
target_sources(fabric_probe PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/hca_clock.cc
  ${CMAKE_CURRENT_LIST_DIR}/rdma_ports.cc
  ${CMAKE_CURRENT_LIST_DIR}/rdma_ud.cc)
if(FABRICMON_WITH_RDMA)
  target_sources(fabric_probe PRIVATE ${CMAKE_CURRENT_LIST_DIR}/verbs_ops_ibv.cc)
  target_link_libraries(fabric_probe PUBLIC PkgConfig::IBVERBS)
else()
  target_sources(fabric_probe PRIVATE ${CMAKE_CURRENT_LIST_DIR}/verbs_ops_none.cc)
endif()
