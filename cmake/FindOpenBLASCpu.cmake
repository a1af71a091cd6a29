# Finds OpenBLAS's CBLAS interface. Debian keeps cblas.h in an alternative-specific folder.
find_path(OpenBLAS_INCLUDE_DIR cblas.h
  PATHS /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/aarch64-linux-gnu/openblas-pthread
        /usr/include/openblas /usr/include)
find_library(OpenBLAS_LIBRARY NAMES openblas
  PATHS /usr/lib/x86_64-linux-gnu/openblas-pthread /usr/lib/aarch64-linux-gnu/openblas-pthread)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(OpenBLASCpu
  REQUIRED_VARS OpenBLAS_LIBRARY OpenBLAS_INCLUDE_DIR
  FAIL_MESSAGE "OpenBLAS not found: apt-get install libopenblas-dev")
