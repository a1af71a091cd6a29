#pragma once

// How a layer runs BF16 or FP16 on the GPU (docs/precision.md): which 16-bit storage it asks
// for, what it then says it runs in, and the reader that hands it its inputs in that storage.
#include <cstdint>
#include <memory>

#include "doppio/core/layer.hpp"
#include "doppio/core/synced_memory.hpp"
#include "doppio/device/gpu_half.hpp"

namespace doppio {

// The storage a layer with 16-bit GPU kernels runs in: kBfloat16 or kFloat16 where the net
// asks it for BF16 or FP16 and it runs on the GPU with float blobs; kFloat32 otherwise.
template <typename Dtype>
GpuStorage GpuStorageOf(const Layer<Dtype>& layer);

// What such a layer says it runs in: storage and math of that type (fp32 accumulation inside
// the tensor-core products is the hardware's, as cuBLAS and cuDNN name it).
LayerPrecision StoragePrecision(GpuStorage storage);

#ifdef DOPPIO_WITH_CUDA

// One input of a 16-bit kernel: a float buffer's device bytes where they already hold the
// storage asked, else their conversion into a buffer the reader owns. The conversion is kept
// while its source is not written again (SyncedMemory::write_count), so a parameter's 16-bit
// copy is made once per update, as the oneDNN engine's reordered weights are; an activation's
// is made once per write. One reader per input of a layer.
class GpuStorageReader {
 public:
  const void* Read(const std::shared_ptr<SyncedMemory>& source, GpuStorage storage,
                   GpuContext& gpu);

 private:
  std::weak_ptr<SyncedMemory> source_;
  std::uint64_t source_writes_ = 0;
  GpuStorage storage_ = GpuStorage::kFloat32;
  std::shared_ptr<SyncedMemory> copy_;
};

#endif

}  // namespace doppio
