#include "doppio/parallel/gpu_selection.hpp"

#include <glog/logging.h>
#include <unistd.h>

#include <cctype>
#include <climits>
#include <cstdio>
#include <cstdlib>

#include "doppio/core/common.hpp"
#include "doppio/parallel/gpu_memory_ops.hpp"
#include "doppio/parallel/nccl_communicator.hpp"
#include "doppio/parallel/staging_communicator.hpp"
#include "doppio/util/hash.hpp"

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

int PickLocalGpu(const GpuRequest& request, int local_rank, int local_size, int device_count,
                 bool visible_per_rank) {
  DOPPIO_ENSURE(!request.empty()) << "PickLocalGpu: --gpu names no device";
  DOPPIO_ENSURE(local_rank >= 0 && local_rank < local_size)
      << "local rank " << local_rank << " of " << local_size << " ranks on this node";
  if (request.all) {
    DOPPIO_ENSURE(device_count > 0) << "--gpu=all given, but this node has no CUDA device";
    // Two ranks given the same GPU after all are found by its PCI location and exchange
    // through host memory (ChooseDeviceCommPath).
    if (visible_per_rank && device_count == 1) return 0;
    DOPPIO_ENSURE(local_size <= device_count)
        << "--gpu=all: " << local_size << " ranks run on this node but it has only " << device_count
        << " GPU" << (device_count == 1 ? "" : "s")
        << " visible; start at most one rank per GPU, or name the devices: --gpu=0 for ranks "
           "that share GPU 0, or for ranks that each see only their own GPU (a "
           "CUDA_VISIBLE_DEVICES per rank)";
    return local_rank;
  }
  const int device = request.ids[local_rank % request.ids.size()];
  DOPPIO_ENSURE(device_count == 0 || device < device_count)
      << "--gpu: there is no GPU " << device << " on this node (" << device_count << " CUDA device"
      << (device_count == 1 ? "" : "s") << ", ids 0 to " << device_count - 1 << ")";
  return device;
}

std::uint64_t PciBusIdKey(const std::string& text) {
  // domain (up to 32 bits), bus (8), device (5), function (3), each ended by its separator.
  const char ends[4] = {':', ':', '.', '\0'};
  const std::uint64_t limits[4] = {0xffffffffu, 0xffu, 0x1fu, 0x7u};
  const std::size_t max_digits[4] = {8, 2, 2, 1};
  std::uint64_t fields[4] = {};
  std::size_t pos = 0;
  for (int f = 0; f < 4; ++f) {
    std::size_t digits = 0;
    while (pos < text.size() && digits < max_digits[f] &&
           std::isxdigit(static_cast<unsigned char>(text[pos]))) {
      const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(text[pos])));
      fields[f] = fields[f] * 16 + (c <= '9' ? c - '0' : c - 'a' + 10);
      ++pos;
      ++digits;
    }
    const bool ended =
        ends[f] == '\0' ? pos == text.size() : pos < text.size() && text[pos] == ends[f];
    DOPPIO_ENSURE(digits > 0 && ended && fields[f] <= limits[f])
        << "'" << text
        << "' is not a PCI bus id (domain:bus:device.function in hex, such as 0000:3b:00.0)";
    ++pos;
  }
  return fields[0] << 20 | fields[1] << 12 | fields[2] << 4 | fields[3];
}

std::string PciBusIdText(std::uint64_t key) {
  char text[32];
  std::snprintf(
      text, sizeof(text), "%04llx:%02llx:%02llx.%llx", static_cast<unsigned long long>(key >> 20),
      static_cast<unsigned long long>(key >> 12 & 0xff),
      static_cast<unsigned long long>(key >> 4 & 0xff), static_cast<unsigned long long>(key & 0xf));
  return text;
}

GpuCommRequest ParseGpuCommRequest(const std::string& text, const std::string& flag) {
  if (text == "auto") return GpuCommRequest::kAuto;
  if (text == "nccl") return GpuCommRequest::kNccl;
  if (text == "mpi") return GpuCommRequest::kMpi;
  DOPPIO_FAIL() << flag << " must be auto, nccl or mpi, not '" << text << "'";
}

DeviceCommChoice ChooseDeviceCommPath(const std::vector<RankDevice>& ranks, bool nccl_built,
                                      GpuCommRequest request) {
  DeviceCommChoice choice;
  if (request == GpuCommRequest::kMpi) {
    choice.reason = "MPI was asked for";
    return choice;
  }
  if (request == GpuCommRequest::kNccl) {
    DOPPIO_ENSURE(nccl_built) << "NCCL was asked for, but this build of doppio has no NCCL";
    choice.path = DeviceCommPath::kNccl;
  }
  std::string shared;
  for (std::size_t a = 0; a < ranks.size() && shared.empty(); ++a) {
    for (std::size_t b = a + 1; b < ranks.size() && shared.empty(); ++b) {
      if (ranks[a].host == ranks[b].host && ranks[a].pci == ranks[b].pci) {
        shared = "ranks " + std::to_string(a) + " and " + std::to_string(b) +
                 " share the GPU at PCI " + PciBusIdText(ranks[a].pci) +
                 " of one node, CUDA device " + std::to_string(ranks[a].device) + " of rank " +
                 std::to_string(a) + " and " + std::to_string(ranks[b].device) + " of rank " +
                 std::to_string(b);
      }
    }
  }
  if (request == GpuCommRequest::kNccl) {
    choice.reason = shared.empty() ? "asked for"
                                   : "asked for, though " + shared +
                                         ": NCCL refuses that (\"Duplicate GPU\") "
                                         "unless each rank has its own NCCL_HOSTID";
    return choice;
  }
  if (!shared.empty()) {
    choice.reason = shared;
    return choice;
  }
  if (!nccl_built) {
    choice.reason = "this build of doppio has no NCCL";
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
                                                  std::shared_ptr<GpuContext> gpu,
                                                  GpuCommRequest request, std::size_t chunk_bytes) {
  DOPPIO_ENSURE(base != nullptr && gpu != nullptr) << "MakeGpuCommunicator: no base or no GPU";
  if (base->size() == 1 && request != GpuCommRequest::kNccl) return base;
  const std::uint64_t mine[4] = {HostNameHash(), static_cast<std::uint64_t>(gpu->device()),
                                 PciBusIdKey(gpu->pci_bus_id()), base->accepts_device_buffers()};
  std::vector<std::uint64_t> all(4 * base->size());
  base->Allgather(mine, all.data(), 4, CommType::kUInt64, "ranks' GPUs");
  std::vector<RankDevice> ranks(base->size());
  // Device buffers go to MPI as they are only if every rank's MPI takes them.
  bool cuda_aware = true;
  for (int r = 0; r < base->size(); ++r) {
    ranks[r] = {all[4 * r], static_cast<int>(all[4 * r + 1]), all[4 * r + 2]};
    cuda_aware = cuda_aware && all[4 * r + 3] != 0;
  }
  // The same data on every rank: every rank takes the same path.
  const DeviceCommChoice choice = ChooseDeviceCommPath(ranks, kBuiltWithNccl, request);
#ifdef DOPPIO_WITH_NCCL
  if (choice.path == DeviceCommPath::kNccl) {
    auto nccl = std::make_shared<NcclCommunicator>(base, gpu);
    LOG(INFO) << "Gradient exchange between the GPUs: NCCL (" << choice.reason
              << "): " << nccl->description();
    return nccl;
  }
#endif
  if (cuda_aware) {
    auto direct = std::make_shared<StagingCommunicator>(base, MakeGpuMemoryOps(gpu), chunk_bytes,
                                                        DeviceBufferPath::kDirect);
    LOG(INFO) << "Gradient exchange between the GPUs: CUDA-aware MPI, device buffers passed "
              << "directly in " << chunk_bytes / 1024.0 << " KB chunks (" << choice.reason << ")";
    return direct;
  }
  auto staged = std::make_shared<StagingCommunicator>(base, MakeGpuMemoryOps(gpu), chunk_bytes);
  LOG(INFO) << "Gradient exchange between the GPUs: MPI, staged through pinned host memory in "
            << chunk_bytes / 1024.0 << " KB chunks (" << choice.reason
            << "; the MPI library is not CUDA-aware)";
  return staged;
}

}  // namespace doppio
