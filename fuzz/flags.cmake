# -DFABRICMON_FUZZ=ON: every library is built with libFuzzer coverage and
# ASan/UBSan, so the fuzz targets (fuzz/CMakeLists.txt) see inside the
# parsers they call. Included by the top-level CMakeLists.txt before any
# directory. Clang only (libFuzzer ships with it): scripts/fuzz.sh
# configures with CC=clang CXX=clang++.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "FABRICMON_FUZZ needs clang++ (libFuzzer): "
                      "configure with -DCMAKE_CXX_COMPILER=clang++")
endif()
add_compile_options(-fsanitize=fuzzer-no-link,address,undefined
                    -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
add_link_options(-fsanitize=address,undefined)
