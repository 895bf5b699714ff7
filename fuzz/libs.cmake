# The project libraries a fuzz target (or its replay) may call into: every
# parser-holding one that exists in this build, so a target added for a new
# parser needs no CMake edit. Not the daemon, exporters or simulator (no
# parser of untrusted bytes there), which keeps the instrumented fuzz build
# smaller.
set(FABRICMON_FUZZ_LIBS "")
foreach(lib fabric_core fabric_sources fabric_auth fabric_probe fabric_http
            fabric_benchtool fabric_osm_wire fabric_mad fabric_collectors
            fabric_config fabric_mad_broker)
  if(TARGET ${lib})
    list(APPEND FABRICMON_FUZZ_LIBS ${lib})
  endif()
endforeach()
