# oneDNN (Debian: libdnnl-dev), found by its header and library rather than its CMake package,
# whose config also requires the OpenCL headers (its GPU runtime), which Doppio does not use.
find_path(OneDNN_INCLUDE_DIR oneapi/dnnl/dnnl.hpp HINTS ENV DNNL_ROOT PATH_SUFFIXES include)
find_library(OneDNN_LIBRARY dnnl HINTS ENV DNNL_ROOT PATH_SUFFIXES lib lib64)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(OneDNN REQUIRED_VARS OneDNN_LIBRARY OneDNN_INCLUDE_DIR)
