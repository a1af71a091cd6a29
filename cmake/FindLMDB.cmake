# Finds LMDB (Debian: liblmdb-dev). Defines LMDB_INCLUDE_DIR, LMDB_LIBRARY and the imported
# target LMDB::lmdb.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(PC_LMDB QUIET lmdb)
endif()
find_path(LMDB_INCLUDE_DIR lmdb.h HINTS ${PC_LMDB_INCLUDE_DIRS} ENV LMDB_ROOT PATH_SUFFIXES include)
find_library(LMDB_LIBRARY NAMES lmdb HINTS ${PC_LMDB_LIBRARY_DIRS} ENV LMDB_ROOT
  PATH_SUFFIXES lib lib64)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(LMDB REQUIRED_VARS LMDB_LIBRARY LMDB_INCLUDE_DIR
  FAIL_MESSAGE "LMDB not found: apt-get install liblmdb-dev")
if(LMDB_FOUND AND NOT TARGET LMDB::lmdb)
  add_library(LMDB::lmdb UNKNOWN IMPORTED)
  set_target_properties(LMDB::lmdb PROPERTIES
    IMPORTED_LOCATION ${LMDB_LIBRARY} INTERFACE_INCLUDE_DIRECTORIES ${LMDB_INCLUDE_DIR})
endif()
mark_as_advanced(LMDB_INCLUDE_DIR LMDB_LIBRARY)
