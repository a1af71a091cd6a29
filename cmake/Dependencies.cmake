# Host dependencies. Each missing one stops configuration with the Debian package to install
# (scripts/setup.sh installs them all).
find_package(Threads REQUIRED)

find_package(Protobuf REQUIRED)
if(NOT TARGET protobuf::protoc)
  message(FATAL_ERROR "protoc not found: apt-get install protobuf-compiler")
endif()

find_package(gflags CONFIG QUIET)
if(NOT gflags_FOUND)
  message(FATAL_ERROR "gflags not found: apt-get install libgflags-dev")
endif()
find_package(glog CONFIG QUIET)
if(NOT glog_FOUND)
  message(FATAL_ERROR "glog not found: apt-get install libgoogle-glog-dev")
endif()

find_package(OpenBLASCpu REQUIRED)
set(DOPPIO_BLAS_LIBRARIES ${OpenBLAS_LIBRARY})
set(DOPPIO_BLAS_INCLUDE_DIRS ${OpenBLAS_INCLUDE_DIR})

# The data pipeline: LMDB for Datum records, OpenCV (core, imgproc, imgcodecs only) to decode,
# resize and encode images, libjpeg-turbo's libjpeg API (Debian's libjpeg62-turbo-dev, the
# library OpenCV's JPEG codec links) to decode JPEGs cropped and scaled.
find_package(LMDB REQUIRED)
find_package(OpenCV REQUIRED COMPONENTS core imgproc imgcodecs)
find_package(JPEG REQUIRED)

# Caffe's other file format: HDF5Data / HDF5Output layers, snapshot_format HDF5 and .h5
# weights (src/util/hdf5*.cpp, through the C API). Required like LMDB: it is a plain Debian
# library, and .h5 files written by Caffe must load in every build.
find_package(HDF5 COMPONENTS C QUIET)
if(NOT HDF5_FOUND)
  message(FATAL_ERROR "HDF5 not found: apt-get install libhdf5-dev")
endif()

# Data-parallel training (src/parallel). Open MPI from Debian is not CUDA-aware: device
# buffers are staged through host memory.
find_package(MPI COMPONENTS C QUIET)
if(NOT MPI_C_FOUND)
  message(FATAL_ERROR "MPI not found: apt-get install libopenmpi-dev openmpi-bin")
endif()
