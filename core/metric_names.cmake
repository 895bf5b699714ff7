# Compiles docs/metrics.md's tables into core/metric_names.cc: each row's
# metric name under its "## section" heading. The doc is the one list of
# metric names (issue 41 item 6); editing it re-runs CMake, so the daemon's
# known-series lists and the tests that check names against the doc cannot
# drift from it.
set(doc ${CMAKE_SOURCE_DIR}/docs/metrics.md)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${doc})
# Only headings and table rows that open with a backticked name. A ';' in a
# row splits it into more list items; only the first piece starts with "| `".
file(STRINGS ${doc} lines REGEX "^(## |\\| `fabric_)")
set(section "")
set(rows "")
foreach(line IN LISTS lines)
  if(line MATCHES "^## (.+)$")
    set(section "${CMAKE_MATCH_1}")
  elseif(line MATCHES "^\\| `(fabric_[a-zA-Z0-9_]+)")
    string(APPEND rows "    {\"${section}\", \"${CMAKE_MATCH_1}\"},\n")
  endif()
endforeach()
set(METRIC_NAME_ROWS "${rows}")
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/metric_names_table.inc.in
               ${CMAKE_CURRENT_BINARY_DIR}/generated/core/metric_names_table.inc
               @ONLY)
