// Built with CUDA only: without it there is no GPU mode to upload for.
#ifdef DOPPIO_WITH_CUDA
#include "doppio/data/batch_uploader.hpp"

#include <chrono>

#include "doppio/device/gpu_math.hpp"
#include "doppio/device/gpu_util.hpp"

namespace doppio {

template <typename Dtype>
struct BatchUploader<Dtype>::Slot {
  // Recorded on the compute stream after the copy into the tops: the next write into the
  // batch's device memory waits for it.
  cudaEvent_t consumed = nullptr;
  bool consumed_pending = false;
  bool ready = false;  // the device copy holds the batch's current contents

  ~Slot() {
    if (consumed) cudaEventDestroy(consumed);
  }
};

template <typename Dtype>
struct BatchUploader<Dtype>::Stream {
  cudaStream_t stream = nullptr;
  ~Stream() {
    if (stream) cudaStreamDestroy(stream);
  }
};

template <typename Dtype>
BatchUploader<Dtype>::BatchUploader() = default;

template <typename Dtype>
BatchUploader<Dtype>::~BatchUploader() = default;

template <typename Dtype>
void BatchUploader<Dtype>::Enable(const std::shared_ptr<GpuContext>& gpu) {
  std::lock_guard<std::mutex> lock(mutex_);
  DOPPIO_ENSURE(gpu_ == nullptr || gpu_ == gpu)
      << "a data layer's batches are uploaded to one GPU context";
  if (gpu_ != nullptr) return;
  gpu_ = gpu;
  enabled_.notify_all();
}

template <typename Dtype>
std::shared_ptr<GpuContext> BatchUploader<Dtype>::WaitUntilEnabled(
    const std::function<bool()>& stopping) {
  std::unique_lock<std::mutex> lock(mutex_);
  // Stopping is the prefetcher's, under its own lock: polled rather than signalled here.
  while (gpu_ == nullptr) {
    if (stopping()) return nullptr;
    enabled_.wait_for(lock, std::chrono::milliseconds(10));
  }
  return gpu_;
}

template <typename Dtype>
typename BatchUploader<Dtype>::Slot* BatchUploader<Dtype>::Prepare(Batch<Dtype>* batch) {
  Slot* slot = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (gpu_ == nullptr) return nullptr;
    std::unique_ptr<Slot>& entry = slots_[batch];
    if (!entry) entry = std::make_unique<Slot>();
    slot = entry.get();
  }
  gpu_->MakeCurrent();
  if (!stream_) {
    stream_ = std::make_unique<Stream>();
    DOPPIO_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_->stream, cudaStreamNonBlocking));
  }
  if (!slot->consumed) {
    DOPPIO_CUDA_CHECK(cudaEventCreateWithFlags(&slot->consumed, cudaEventDisableTiming));
  }
  if (slot->consumed_pending) {
    DOPPIO_CUDA_CHECK(cudaEventSynchronize(slot->consumed));
    slot->consumed_pending = false;
  }
  return slot;
}

template <typename Dtype>
void BatchUploader<Dtype>::MarkReady(Slot* slot) {
  // The batch goes to the consumer once its device copy is whole, so Forward never waits on
  // this stream.
  DOPPIO_CUDA_CHECK(cudaStreamSynchronize(stream_->stream));
  slot->ready = true;
}

template <typename Dtype>
void BatchUploader<Dtype>::Push(Blob<Dtype>* blob) {
  if (blob->count() == 0) return;
  // A ring's batch is pinned once, the first time it is uploaded (that once, PinHostMemory
  // moves what the fill wrote); every later fill writes into the pinned memory.
  blob->data()->PinHostMemory();
  blob->data()->AsyncGpuPush(*gpu_, stream_->stream);
}

template <typename Dtype>
void BatchUploader<Dtype>::Upload(Batch<Dtype>* batch) {
  Slot* slot = Prepare(batch);
  if (slot == nullptr || slot->ready) return;
  Push(&batch->data);
  Push(&batch->label);
  MarkReady(slot);
}

template <typename Dtype>
cudaStream_t BatchUploader<Dtype>::BeginDeviceFill(Batch<Dtype>* batch) {
  Slot* slot = Prepare(batch);
  DOPPIO_ENSURE(slot != nullptr) << "a batch is written on the device only in GPU mode";
  // Allocated on the compute stream, whose kernels may still read a cached block that the
  // upload stream is not ordered after (as in AsyncGpuPush).
  if (batch->data.data()->head() == SyncedMemory::Head::kUninitialized) {
    batch->data.mutable_gpu_data(*gpu_);
    gpu_->Synchronize();
  }
  return stream_->stream;
}

template <typename Dtype>
void BatchUploader<Dtype>::EndDeviceFill(Batch<Dtype>* batch) {
  Slot* slot = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    slot = slots_.at(batch).get();
  }
  Push(&batch->label);
  MarkReady(slot);
}

template <typename Dtype>
bool BatchUploader<Dtype>::CopyToTops(const Batch<Dtype>& batch, Blob<Dtype>* data,
                                      Blob<Dtype>* label) {
  std::shared_ptr<GpuContext> gpu;
  Slot* slot = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = slots_.find(&batch);
    if (gpu_ == nullptr || it == slots_.end() || !it->second->ready) return false;
    gpu = gpu_;
    slot = it->second.get();
  }
  data->Reshape(batch.data.shape());
  gpu_copy(*gpu, data->count(), batch.data.gpu_data(*gpu), data->mutable_gpu_data(*gpu));
  if (label) {
    label->Reshape(batch.label.shape());
    gpu_copy(*gpu, label->count(), batch.label.gpu_data(*gpu), label->mutable_gpu_data(*gpu));
  }
  slot->ready = false;
  gpu->MakeCurrent();
  DOPPIO_CUDA_CHECK(cudaEventRecord(slot->consumed, gpu->stream()));
  slot->consumed_pending = true;
  return true;
}

DOPPIO_INSTANTIATE_CLASS(BatchUploader);

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDA
