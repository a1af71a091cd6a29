# -DDOPPIO_FUZZ=ON (docs/fuzzing.md): the library is instrumented for libFuzzer's coverage and
# checked by ASan and UBSan; tests/fuzz/ then builds one libFuzzer binary per target. The
# flags go on every target defined after this point, the parts included, so a finding deep
# in a layer is reported where it happens.
if(NOT DOPPIO_FUZZ)
  return()
endif()
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "DOPPIO_FUZZ needs clang (libFuzzer): configure with CC=clang CXX=clang++")
endif()
if(NOT DOPPIO_CUDA STREQUAL "OFF")
  message(FATAL_ERROR "DOPPIO_FUZZ fuzzes the host code: configure with -DDOPPIO_CUDA=OFF")
endif()
# -O1, the optimisation libFuzzer's documentation builds with: under ASan and UBSan, -O3 costs
# twice the compile time of the whole library for little more speed of execution.
set(CMAKE_CXX_FLAGS_RELEASE "-O1 -DNDEBUG")
set(CMAKE_C_FLAGS_RELEASE "-O1 -DNDEBUG")
# UBSan stops at its first report, so that libFuzzer records it as a crash with its input
# rather than printing it and going on.
set(DOPPIO_SANITIZE -fsanitize=address,undefined -fno-sanitize-recover=all)
add_compile_options(-fsanitize=fuzzer-no-link ${DOPPIO_SANITIZE} -fno-omit-frame-pointer
                    -gline-tables-only)
add_link_options(${DOPPIO_SANITIZE})
