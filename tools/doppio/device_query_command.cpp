// doppio device_query: describes the compute devices this build can use.
#include <glog/logging.h>

#include <fstream>
#include <string>
#include <thread>

#include "command.hpp"
#include "common_flags.hpp"
#include "doppio/device/gpu_context.hpp"

#ifdef DOPPIO_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace doppio {
namespace {

std::string CpuModelName() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  return "unknown CPU";
}

#ifdef DOPPIO_WITH_CUDA
int Attribute(cudaDeviceAttr attribute, int device) {
  int value = 0;
  cudaDeviceGetAttribute(&value, attribute, device);
  return value;
}

void QueryGpu(int device) {
  cudaDeviceProp prop;
  const cudaError_t status = cudaGetDeviceProperties(&prop, device);
  DOPPIO_ENSURE(status == cudaSuccess)
      << "device_query: GPU " << device << ": " << cudaGetErrorString(status);
  // Clock rate, copy/compute overlap and the kernel timeout come from attributes: newer CUDA
  // releases dropped those fields from cudaDeviceProp.
  LOG(INFO) << "Device id:                     " << device;
  LOG(INFO) << "Major revision number:         " << prop.major;
  LOG(INFO) << "Minor revision number:         " << prop.minor;
  LOG(INFO) << "Name:                          " << prop.name;
  // Unlike the device id, the same under any CUDA_VISIBLE_DEVICES.
  char pci[64] = {};
  if (cudaDeviceGetPCIBusId(pci, sizeof(pci) - 1, device) != cudaSuccess) cudaGetLastError();
  LOG(INFO) << "PCI bus id:                    " << pci;
  LOG(INFO) << "Total global memory:           " << prop.totalGlobalMem;
  LOG(INFO) << "Total shared memory per block: " << prop.sharedMemPerBlock;
  LOG(INFO) << "Total registers per block:     " << prop.regsPerBlock;
  LOG(INFO) << "Warp size:                     " << prop.warpSize;
  LOG(INFO) << "Maximum memory pitch:          " << prop.memPitch;
  LOG(INFO) << "Maximum threads per block:     " << prop.maxThreadsPerBlock;
  LOG(INFO) << "Maximum dimension of block:    " << prop.maxThreadsDim[0] << ", "
            << prop.maxThreadsDim[1] << ", " << prop.maxThreadsDim[2];
  LOG(INFO) << "Maximum dimension of grid:     " << prop.maxGridSize[0] << ", "
            << prop.maxGridSize[1] << ", " << prop.maxGridSize[2];
  LOG(INFO) << "Clock rate:                    " << Attribute(cudaDevAttrClockRate, device);
  LOG(INFO) << "Total constant memory:         " << prop.totalConstMem;
  LOG(INFO) << "Texture alignment:             " << prop.textureAlignment;
  LOG(INFO) << "Concurrent copy and execution: "
            << (Attribute(cudaDevAttrAsyncEngineCount, device) > 0 ? "Yes" : "No");
  LOG(INFO) << "Number of multiprocessors:     " << prop.multiProcessorCount;
  LOG(INFO) << "Kernel execution timeout:      "
            << (Attribute(cudaDevAttrKernelExecTimeout, device) ? "Yes" : "No");
}
#endif

int DeviceQuery() {
  LOG(INFO) << "CPU: " << CpuModelName() << ", " << std::thread::hardware_concurrency()
            << " logical cores";
  std::vector<int> gpus = GpusFromFlag();  // Error for --gpu in a build without GPU support
#ifdef DOPPIO_WITH_CUDA
  const int count = GpuDeviceCount();
  if (count == 0) {
    // A machine without a GPU is fine unless one was asked for.
    DOPPIO_ENSURE(gpus.empty()) << "device_query: --gpu=" << FLAGS_gpu << " given, but "
                                << GpuUnavailableReason();
    LOG(INFO) << "No GPU (" << GpuUnavailableReason() << "): doppio runs on the CPU";
    return 0;
  }
  if (gpus.empty() || gpus[0] == -1) {
    gpus.clear();
    for (int i = 0; i < count; ++i) gpus.push_back(i);
  }
  for (int device : gpus) {
    DOPPIO_ENSURE(device < count) << "device_query: there is no GPU " << device << " (" << count
                                  << " found)";
    QueryGpu(device);
  }
#else
  LOG(INFO) << "This doppio was built without GPU support (DOPPIO_CUDA=OFF): it runs on the CPU";
#endif
  return 0;
}

}  // namespace
}  // namespace doppio

DOPPIO_REGISTER_COMMAND(device_query, "show the CPU and the GPUs doppio can use",
                        doppio::DeviceQuery);
