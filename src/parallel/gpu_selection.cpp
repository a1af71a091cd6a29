#include "doppio/parallel/gpu_selection.hpp"

#include <glog/logging.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>

#include "doppio/core/common.hpp"
#include "doppio/parallel/gpu_memory_ops.hpp"
#include "doppio/parallel/hash.hpp"
#include "doppio/parallel/nccl_communicator.hpp"

namespace doppio {

GpuRequest ParseGpuRequest(const std::string& text) {
  GpuRequest request;
  if (text.empty()) return request;
  if (text == "all") {
    request.all = true;
    return request;
  }
  std::string part;
  auto take = [&] {
    char* end = nullptr;
    const long id = std::strtol(part.c_str(), &end, 10);
    DOPPIO_ENSURE(!part.empty() && end != part.c_str() && *end == '\0' && id >= 0 && id < INT_MAX)
        << "--gpu: '" << part << "' is not a device id (give ids like --gpu=0,1, or --gpu=all)";
    request.ids.push_back(static_cast<int>(id));
    part.clear();
  };
  for (char c : text) {
    if (c == ',') {
      take();
    } else {
      part += c;
    }
  }
  take();
  return request;
}

int PickLocalGpu(const GpuRequest& request, int local_rank, int local_size, int device_count) {
  DOPPIO_ENSURE(!request.empty()) << "PickLocalGpu: --gpu names no device";
  DOPPIO_ENSURE(local_rank >= 0 && local_rank < local_size)
      << "local rank " << local_rank << " of " << local_size << " ranks on this node";
  if (request.all) {
    DOPPIO_ENSURE(device_count > 0) << "--gpu=all given, but this node has no CUDA device";
    DOPPIO_ENSURE(local_size <= device_count)
        << "--gpu=all: " << local_size << " ranks run on this node but it has only " << device_count
        << " GPU" << (device_count == 1 ? "" : "s")
        << "; start at most one rank per GPU, or name the devices the ranks may share (e.g. "
           "--gpu=0)";
    return local_rank;
  }
  const int device = request.ids[local_rank % request.ids.size()];
  DOPPIO_ENSURE(device_count == 0 || device < device_count)
      << "--gpu: there is no GPU " << device << " on this node (" << device_count << " CUDA device"
      << (device_count == 1 ? "" : "s") << ", ids 0 to " << device_count - 1 << ")";
  return device;
}

DeviceCommChoice ChooseDeviceCommPath(const std::vector<RankDevice>& ranks, bool nccl_built,
                                      bool nccl_allowed) {
  DeviceCommChoice choice;
  for (std::size_t a = 0; a < ranks.size(); ++a) {
    for (std::size_t b = a + 1; b < ranks.size(); ++b) {
      if (ranks[a].host == ranks[b].host && ranks[a].device == ranks[b].device) {
        choice.reason = "ranks " + std::to_string(a) + " and " + std::to_string(b) + " share GPU " +
                        std::to_string(ranks[a].device) + " of one node";
        return choice;
      }
    }
  }
  if (!nccl_built) {
    choice.reason = "this build of doppio has no NCCL";
    return choice;
  }
  if (!nccl_allowed) {
    choice.reason = "NCCL was not allowed";
    return choice;
  }
  choice.path = DeviceCommPath::kNccl;
  choice.reason = "every rank has a GPU of its own";
  return choice;
}

std::uint64_t HostNameHash() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return 0;
  return Hasher().Add(std::string(name)).value();
}

std::shared_ptr<Communicator> MakeGpuCommunicator(std::shared_ptr<Communicator> base,
                                                  std::shared_ptr<GpuContext> gpu, bool allow_nccl,
                                                  std::size_t chunk_bytes) {
  DOPPIO_ENSURE(base != nullptr && gpu != nullptr) << "MakeGpuCommunicator: no base or no GPU";
  if (base->size() == 1) return base;
  const std::uint64_t mine[2] = {HostNameHash(), static_cast<std::uint64_t>(gpu->device())};
  std::vector<std::uint64_t> all(2 * base->size());
  base->Allgather(mine, all.data(), 2, CommType::kUInt64, "ranks' GPUs");
  std::vector<RankDevice> ranks(base->size());
  for (int r = 0; r < base->size(); ++r) ranks[r] = {all[2 * r], all[2 * r + 1]};
  // The same data on every rank: every rank takes the same path.
  const DeviceCommChoice choice = ChooseDeviceCommPath(ranks, kBuiltWithNccl, allow_nccl);
#ifdef DOPPIO_WITH_NCCL
  if (choice.path == DeviceCommPath::kNccl) {
    auto nccl = std::make_shared<NcclCommunicator>(base, gpu);
    LOG(INFO) << "Gradient exchange between the GPUs: NCCL (" << choice.reason
              << "): " << nccl->description();
    return nccl;
  }
#endif
  base->set_device_memory_ops(MakeGpuMemoryOps(gpu), chunk_bytes);
  LOG(INFO) << "Gradient exchange between the GPUs: MPI, staged through pinned host memory in "
            << chunk_bytes / 1024.0 << " KB chunks (" << choice.reason << ")";
  return base;
}

}  // namespace doppio
