# DOPPIO_PYTHON: AUTO builds the Python packages (doppio, and caffe over it) and the Python
# layer module when Debian's python3-dev, pybind11-dev, numpy, protobuf and skimage (which
# caffe.io imports) are found, ON requires them,
# OFF leaves them out. Always /usr/bin/python3: Debian's packages load only under it.
doppio_check_switch(DOPPIO_PYTHON "AUTO|ON|OFF")
set(DOPPIO_HAVE_PYTHON OFF)
if(NOT DOPPIO_PYTHON STREQUAL "OFF")
  set(Python3_EXECUTABLE /usr/bin/python3 CACHE FILEPATH "The Python the packages are built for")
  find_package(Python3 QUIET COMPONENTS Interpreter Development.Module Development.Embed)
  set(PYBIND11_FINDPYTHON ON)
  find_package(pybind11 CONFIG QUIET)
  set(numpy_found OFF)
  if(Python3_FOUND)
    execute_process(COMMAND ${Python3_EXECUTABLE} -c "import numpy, google.protobuf, skimage"
                    RESULT_VARIABLE numpy_status OUTPUT_QUIET ERROR_QUIET)
    if(numpy_status EQUAL 0)
      set(numpy_found ON)
    endif()
  endif()
  if(Python3_FOUND AND pybind11_FOUND AND numpy_found)
    set(DOPPIO_HAVE_PYTHON ON)
    # The file a process without an interpreter loads for a Python layer (its soname).
    get_filename_component(DOPPIO_LIBPYTHON_FILE "${Python3_LIBRARY_RELEASE}" REALPATH)
    if(NOT DOPPIO_LIBPYTHON_FILE)
      get_filename_component(DOPPIO_LIBPYTHON_FILE "${Python3_LIBRARIES}" REALPATH)
    endif()
    get_filename_component(DOPPIO_LIBPYTHON_NAME "${DOPPIO_LIBPYTHON_FILE}" NAME)
  elseif(DOPPIO_PYTHON STREQUAL "ON")
    message(FATAL_ERROR "DOPPIO_PYTHON=ON but /usr/bin/python3 with its headers, pybind11, numpy, "
                        "protobuf or skimage was not found: apt-get install python3-dev "
                        "pybind11-dev python3-numpy python3-protobuf python3-skimage")
  endif()
endif()
