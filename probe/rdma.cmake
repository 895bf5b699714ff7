# The RDMA (verbs) probe path, included at the end of probe/CMakeLists.txt.
# The seam, the clock conversion, the port list and the UD transport build
# everywhere (their tests drive a fake VerbsOps); the libibverbs
# implementation of the seam (verbs_ops_ibv.cc) is compiled in, and
# libibverbs linked, only with rdma-core (FABRICMON_WITH_RDMA).
get_target_property(_probe_sources fabric_probe SOURCES)
foreach(_src hca_clock.cc rdma_ports.cc rdma_ud.cc rdma_transport.cc
        verbs_ops_ibv.cc)
  if(NOT _src IN_LIST _probe_sources AND
     NOT ${CMAKE_CURRENT_LIST_DIR}/${_src} IN_LIST _probe_sources)
    target_sources(fabric_probe PRIVATE ${CMAKE_CURRENT_LIST_DIR}/${_src})
  endif()
endforeach()
if(FABRICMON_WITH_RDMA)
  target_compile_definitions(fabric_probe PRIVATE FABRICMON_HAVE_IBVERBS=1)
  target_link_libraries(fabric_probe PUBLIC PkgConfig::IBVERBS)
endif()
