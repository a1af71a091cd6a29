#pragma once

// Built with CUDA only (DOPPIO_WITH_CUDA).

#include <memory>
#include <mutex>
#include <unordered_map>

#include "doppio/core/blob.hpp"
#include "doppio/data/prefetch.hpp"
#include "doppio/device/gpu_context.hpp"

namespace doppio {

// Copies prefetched batches to the device from the prefetch thread, through pinned buffers
// on a stream of its own, so that the upload of the next batches overlaps the compute of
// this one; the data layer's GPU Forward then copies device to device into its tops.
// Batches filled before the first GPU Forward have no device copy: the layer hands those
// over through host memory.
template <typename Dtype>
class BatchUploader {
 public:
  BatchUploader();
  ~BatchUploader();
  BatchUploader(const BatchUploader&) = delete;
  BatchUploader& operator=(const BatchUploader&) = delete;

  // From now on, uploads go to `gpu` (the caller's thread; the same context every time).
  void Enable(const std::shared_ptr<GpuContext>& gpu);
  // On the prefetch thread, once `batch` is filled: uploads it when enabled.
  void Upload(const Batch<Dtype>& batch);
  // Queues the copy of `batch` into the tops on the compute stream (label may be null) and
  // returns true; false when `batch` has no device copy.
  bool CopyToTops(const Batch<Dtype>& batch, Blob<Dtype>* data, Blob<Dtype>* label);

 private:
  struct Slot;  // the device copy of one batch of the prefetcher's ring
  struct Stream;

  std::mutex mutex_;
  std::shared_ptr<GpuContext> gpu_;
  std::unordered_map<const Batch<Dtype>*, std::unique_ptr<Slot>> slots_;
  std::unique_ptr<Stream> stream_;  // used by the prefetch thread only
};

}  // namespace doppio
