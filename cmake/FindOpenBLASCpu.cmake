# Finds OpenBLAS's CBLAS interface. Debian keeps cblas.h in an alternative-specific folder.
# The suffixes also find it under a prefix on CMAKE_PREFIX_PATH (scripts/gpu_check.sh's bundle).
find_path(OpenBLAS_INCLUDE_DIR cblas.h
  PATHS /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/aarch64-linux-gnu/openblas-pthread
        /usr/include/openblas /usr/include
  PATH_SUFFIXES openblas-pthread openblas)
find_library(OpenBLAS_LIBRARY NAMES openblas
  PATHS /usr/lib/x86_64-linux-gnu/openblas-pthread /usr/lib/aarch64-linux-gnu/openblas-pthread
  PATH_SUFFIXES openblas-pthread)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(OpenBLASCpu
  REQUIRED_VARS OpenBLAS_LIBRARY OpenBLAS_INCLUDE_DIR
  FAIL_MESSAGE "OpenBLAS not found: apt-get install libopenblas-dev")
