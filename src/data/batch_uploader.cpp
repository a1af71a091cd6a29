// Built with CUDA only: without it there is no GPU mode to upload for.
#ifdef DOPPIO_WITH_CUDA
#include "doppio/data/batch_uploader.hpp"

#include <cuda_runtime.h>

#include <cstring>

#include "doppio/device/gpu_math.hpp"
#include "doppio/device/gpu_util.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
struct BatchUploader<Dtype>::Slot {
  Blob<Dtype> data;
  Blob<Dtype> label;
  // Recorded on the compute stream after the copy into the tops: the next upload into this
  // slot waits for it.
  cudaEvent_t consumed = nullptr;
  bool consumed_pending = false;
  bool ready = false;  // holds the current contents of its batch

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

namespace {

template <typename Dtype>
void Stage(GpuContext& gpu, cudaStream_t stream, const std::vector<int>& shape,
           const std::vector<Dtype>& values, Blob<Dtype>* blob) {
  blob->Reshape(shape);
  blob->data()->PinHostMemory();
  std::memcpy(blob->mutable_cpu_data(), values.data(), values.size() * sizeof(Dtype));
  blob->data()->AsyncGpuPush(gpu, stream);
}

}  // namespace

template <typename Dtype>
BatchUploader<Dtype>::BatchUploader() = default;

template <typename Dtype>
BatchUploader<Dtype>::~BatchUploader() = default;

template <typename Dtype>
void BatchUploader<Dtype>::Enable(const std::shared_ptr<GpuContext>& gpu) {
  std::lock_guard<std::mutex> lock(mutex_);
  DOPPIO_ENSURE(gpu_ == nullptr || gpu_ == gpu)
      << "a data layer's batches are uploaded to one GPU context";
  gpu_ = gpu;
}

template <typename Dtype>
void BatchUploader<Dtype>::Upload(const Batch<Dtype>& batch) {
  std::shared_ptr<GpuContext> gpu;
  Slot* slot = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (gpu_ == nullptr) return;
    gpu = gpu_;
    std::unique_ptr<Slot>& entry = slots_[&batch];
    if (!entry) entry = std::make_unique<Slot>();
    slot = entry.get();
  }
  gpu->MakeCurrent();
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
  Stage(*gpu, stream_->stream, batch.shape, batch.data, &slot->data);
  if (!batch.label.empty()) {
    Stage(*gpu, stream_->stream, {static_cast<int>(batch.label.size())}, batch.label, &slot->label);
  }
  DOPPIO_CUDA_CHECK(cudaStreamSynchronize(stream_->stream));
  slot->ready = true;
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
  data->Reshape(batch.shape);
  gpu_copy(*gpu, data->count(), slot->data.gpu_data(*gpu), data->mutable_gpu_data(*gpu));
  if (label) {
    label->Reshape({batch.shape[0]});
    gpu_copy(*gpu, label->count(), slot->label.gpu_data(*gpu), label->mutable_gpu_data(*gpu));
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
