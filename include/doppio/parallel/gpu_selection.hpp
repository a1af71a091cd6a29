#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "doppio/device/gpu_context.hpp"
#include "doppio/parallel/communicator.hpp"

namespace doppio {

// What --gpu asks for: nothing (the CPU), every GPU of the node, or a list of device ids.
struct GpuRequest {
  bool all = false;
  std::vector<int> ids;
  bool empty() const { return !all && ids.empty(); }
};

// Parses --gpu's value: "" (the CPU), "all", or device ids separated by commas ("0,1").
// Throws Error naming --gpu for anything else.
GpuRequest ParseGpuRequest(const std::string& text);

// The device of the rank at `local_rank` among the `local_size` ranks of its node, which has
// `device_count` devices. `all`: local rank i takes GPU i, and more ranks on the node than
// GPUs is an Error that says so. A list: local rank i takes entry i (modulo the length, so
// that a shorter list makes ranks share GPUs, as "--gpu=0" does for every rank). An id the
// node does not have is an Error; with no device at all the id is returned as it is, for
// GpuContext::Create to report why there is none. `visible_per_rank`: the launcher set each
// rank's CUDA_VISIBLE_DEVICES (Slurm's --gpus-per-task or --gpu-bind); then with `all` a rank
// that sees one device takes it, however many ranks share the node.
int PickLocalGpu(const GpuRequest& request, int local_rank, int local_size, int device_count,
                 bool visible_per_rank = false);

// Where each rank runs: its node (a hash of the host name), its CUDA device index (for
// messages) and that device's PCI location (PciBusIdKey). The index alone cannot tell
// whether two ranks share a GPU: it counts the devices of the process's
// CUDA_VISIBLE_DEVICES, so two ranks' "device 0" may be different GPUs, and one GPU may have
// different indices in two ranks.
struct RankDevice {
  std::uint64_t host = 0;
  int device = 0;
  std::uint64_t pci = 0;
};

// A PCI location "domain:bus:device.function" in hex, as cudaDeviceGetPCIBusId and
// nvidia-smi write it ("0000:3b:00.0", "00000000:3B:00.0"), as one number: the same for
// every spelling of one location. Throws Error for text of another form.
std::uint64_t PciBusIdKey(const std::string& text);
// A PciBusIdKey as text: "0000:3b:00.0".
std::string PciBusIdText(std::uint64_t key);

// How device buffers travel between the ranks.
enum class DeviceCommPath {
  kNccl,       // NcclCommunicator: every rank has a GPU of its own
  kStagedMpi,  // StagingCommunicator over MPI, through pinned host memory (MakeGpuMemoryOps)
};
struct DeviceCommChoice {
  DeviceCommPath path = DeviceCommPath::kStagedMpi;
  // Why, for the log ("ranks 0 and 1 share the GPU at PCI 0000:3b:00.0 of one node, ...").
  std::string reason;
};
// What the user asked for (`doppio train --gpu_comm`).
enum class GpuCommRequest {
  kAuto,  // NCCL where it can run, else MPI
  kNccl,  // NCCL, even for one rank, and for ranks that share a GPU: NCCL refuses those
          // ("Duplicate GPU") unless each rank has its own NCCL_HOSTID
  kMpi,   // MPI, never NCCL
};
// GpuCommRequest from "auto", "nccl" or "mpi"; Error naming `flag` for anything else.
GpuCommRequest ParseGpuCommRequest(const std::string& text, const std::string& flag);

// kAuto: NCCL when it is built and no two ranks of one node use the GPU at one PCI location
// (NCCL cannot run two ranks on one GPU); else the staged MPI path. kNccl: NCCL (Error when
// the build has none), the reason saying which ranks share a GPU. kMpi: the staged MPI path.
DeviceCommChoice ChooseDeviceCommPath(const std::vector<RankDevice>& ranks, bool nccl_built,
                                      GpuCommRequest request = GpuCommRequest::kAuto);

// A hash of this machine's host name.
std::uint64_t HostNameHash();

// Collective over the ranks of `base` (an MpiCommunicator), each training on `gpu`: gathers
// every rank's (host, device, PCI location), chooses the path (ChooseDeviceCommPath), logs it
// on rank 0, and returns the communicator for the training: an NcclCommunicator over `base`,
// or a StagingCommunicator over `base` in chunks of `chunk_bytes`. One rank: `base` as it is,
// unless NCCL is asked for (to run NCCL's whole path on one GPU).
std::shared_ptr<Communicator> MakeGpuCommunicator(std::shared_ptr<Communicator> base,
                                                  std::shared_ptr<GpuContext> gpu,
                                                  GpuCommRequest request = GpuCommRequest::kAuto,
                                                  std::size_t chunk_bytes = std::size_t(4) << 20);

}  // namespace doppio
