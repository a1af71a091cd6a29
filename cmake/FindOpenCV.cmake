# Finds the OpenCV modules Doppio uses (core, imgproc, imgcodecs). Debian ships OpenCV's own
# CMake package only in the full libopencv-dev, which drags in GUI toolkits; the three
# libopencv-{core,imgproc,imgcodecs}-dev packages carry headers and libraries only. So this
# module uses OpenCV's CMake package when present and otherwise finds the files itself.
# Defines OpenCV_FOUND, OpenCV_INCLUDE_DIRS and OpenCV_LIBS (one imported target per module).
set(_doppio_opencv_modules ${OpenCV_FIND_COMPONENTS})
if(NOT _doppio_opencv_modules)
  set(_doppio_opencv_modules core imgproc imgcodecs)
endif()

find_package(OpenCV CONFIG QUIET COMPONENTS ${_doppio_opencv_modules})
if(NOT OpenCV_FOUND)
  find_path(OpenCV_INCLUDE_DIR opencv2/core.hpp PATH_SUFFIXES opencv4 ENV OpenCV_ROOT)
  set(OpenCV_INCLUDE_DIRS ${OpenCV_INCLUDE_DIR})
  # cvconfig.h and friends live in a multiarch folder on Debian.
  find_path(OpenCV_ARCH_INCLUDE_DIR opencv2/cvconfig.h
    PATHS /usr/include/${CMAKE_LIBRARY_ARCHITECTURE} PATH_SUFFIXES opencv4)
  if(OpenCV_ARCH_INCLUDE_DIR)
    list(APPEND OpenCV_INCLUDE_DIRS ${OpenCV_ARCH_INCLUDE_DIR})
  endif()
  set(OpenCV_LIBS)
  set(_doppio_opencv_missing)
  foreach(module ${_doppio_opencv_modules})
    find_library(OpenCV_${module}_LIBRARY NAMES opencv_${module} ENV OpenCV_ROOT)
    if(OpenCV_${module}_LIBRARY)
      if(NOT TARGET opencv_${module})
        add_library(opencv_${module} UNKNOWN IMPORTED)
        set_target_properties(opencv_${module} PROPERTIES
          IMPORTED_LOCATION ${OpenCV_${module}_LIBRARY}
          INTERFACE_INCLUDE_DIRECTORIES "${OpenCV_INCLUDE_DIRS}")
      endif()
      list(APPEND OpenCV_LIBS opencv_${module})
    else()
      list(APPEND _doppio_opencv_missing libopencv-${module}-dev)
    endif()
    mark_as_advanced(OpenCV_${module}_LIBRARY)
  endforeach()
  include(FindPackageHandleStandardArgs)
  find_package_handle_standard_args(OpenCV REQUIRED_VARS OpenCV_INCLUDE_DIR OpenCV_LIBS
    FAIL_MESSAGE "OpenCV not found: apt-get install ${_doppio_opencv_missing}")
  mark_as_advanced(OpenCV_INCLUDE_DIR OpenCV_ARCH_INCLUDE_DIR)
endif()
