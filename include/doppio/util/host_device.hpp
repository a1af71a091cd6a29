#pragma once

// Marks a function that nvcc compiles for both the host and the device. The host compiler,
// and the CUDA emulation (which runs kernels as host code), see plain host functions.
#if defined(__CUDACC__)
#define DOPPIO_HOST_DEVICE __host__ __device__
#else
#define DOPPIO_HOST_DEVICE
#endif
