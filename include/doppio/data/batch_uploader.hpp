#pragma once

// Built with CUDA only (DOPPIO_WITH_CUDA).

#include <cuda_runtime.h>

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "doppio/core/blob.hpp"
#include "doppio/data/prefetch.hpp"
#include "doppio/device/gpu_context.hpp"

namespace doppio {

// Puts prefetched batches on the device from the prefetch thread, on a stream of its own, so
// that the upload of the next batches overlaps the compute of this one; the data layer's GPU
// Forward then copies device to device into its tops. Once enabled, a batch's host memory is
// pinned, so the records are transformed straight into the memory the copy reads (no staging
// copy), or the batch is written on the device directly (nvJPEG decoding). Batches filled
// before the first GPU Forward have no device copy: the layer hands those over through host
// memory.
template <typename Dtype>
class BatchUploader {
 public:
  BatchUploader();
  ~BatchUploader();
  BatchUploader(const BatchUploader&) = delete;
  BatchUploader& operator=(const BatchUploader&) = delete;

  // From now on, uploads go to `gpu` (the caller's thread; the same context every time).
  void Enable(const std::shared_ptr<GpuContext>& gpu);
  // On the prefetch thread, for batches written on the device: the GPU once the first GPU
  // Forward has enabled uploads, or null if `stopping` says so first (polled).
  std::shared_ptr<GpuContext> WaitUntilEnabled(const std::function<bool()>& stopping);

  // On the prefetch thread, once `batch` is filled on the host: pins its memory (the first
  // time; later fills write into the pinned memory) and uploads it, when enabled. Nothing
  // for a batch written on the device.
  void Upload(Batch<Dtype>* batch);
  // On the prefetch thread, for a batch whose data is written on the device (enabled only):
  // waits until the batch's previous contents were copied into the tops and returns the
  // stream to write `batch->data` (of its final shape) on. EndDeviceFill, once that is
  // queued, uploads the labels, written on the host, and waits for the stream.
  cudaStream_t BeginDeviceFill(Batch<Dtype>* batch);
  void EndDeviceFill(Batch<Dtype>* batch);

  // Queues the copy of `batch` into the tops on the compute stream (label may be null) and
  // returns true; false when `batch` has no device copy.
  bool CopyToTops(const Batch<Dtype>& batch, Blob<Dtype>* data, Blob<Dtype>* label);

 private:
  struct Slot;  // the device state of one batch of the prefetcher's ring
  struct Stream;

  // The batch's slot once its previous contents were copied into the tops, the stream
  // created; null when not enabled.
  Slot* Prepare(Batch<Dtype>* batch);
  void MarkReady(Slot* slot);

  // Pushes a blob written on the host on the upload stream, pinning it first.
  void Push(Blob<Dtype>* blob);

  std::mutex mutex_;
  std::condition_variable enabled_;
  // Set once, under the mutex; the prefetch thread reads it unlocked after seeing it set.
  std::shared_ptr<GpuContext> gpu_;
  std::unordered_map<const Batch<Dtype>*, std::unique_ptr<Slot>> slots_;
  std::unique_ptr<Stream> stream_;  // used by the prefetch thread only
};

}  // namespace doppio
