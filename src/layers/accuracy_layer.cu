#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/accuracy_layer.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

namespace {
// One thread per (outer, inner) position ranks the true class among the scores; the counting
// is done on the host from the verdicts, in the CPU code's order.
template <typename Dtype>
__global__ void AccuracyVerdicts(long long n, const Dtype* scores, const Dtype* labels, int classes,
                                 int inner, int top_k, bool has_ignore_label, int ignore_label,
                                 int* verdicts) {
  DOPPIO_KERNEL_LOOP(p, n) {
    const int label = static_cast<int>(labels[p]);
    if (has_ignore_label && label == ignore_label) {
      verdicts[p] = -1;
      continue;
    }
    if (label < 0 || label >= classes) {
      verdicts[p] = -2;
      continue;
    }
    const Dtype* s = scores + (p / inner) * classes * inner + p % inner;
    const Dtype true_score = s[static_cast<long long>(label) * inner];
    int at_least_as_good = -1;  // the true class counts itself
    for (int c = 0; c < classes && at_least_as_good < top_k; ++c) {
      at_least_as_good += s[static_cast<long long>(c) * inner] >= true_score ? 1 : 0;
    }
    verdicts[p] = at_least_as_good < top_k ? 1 : 0;
  }
}
}  // namespace

template <typename Dtype>
void AccuracyLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  GpuContext& gpu = this->gpu();
  const int num_classes = bottom[0]->shape(label_axis_);
  const long long positions = static_cast<long long>(outer_num_) * inner_num_;
  const std::size_t bytes = sizeof(int) * static_cast<std::size_t>(positions);
  if (!verdicts_gpu_ || verdicts_gpu_->size() < bytes) {
    verdicts_gpu_ = std::make_shared<SyncedMemory>(bytes);
  }
  LaunchKernel("AccuracyVerdicts", gpu, positions, AccuracyVerdicts<Dtype>, positions,
               bottom[0]->gpu_data(gpu), bottom[1]->gpu_data(gpu), num_classes, inner_num_, top_k_,
               has_ignore_label_, ignore_label_,
               static_cast<int*>(verdicts_gpu_->mutable_gpu_data(gpu)));
  const int* verdicts = static_cast<const int*>(verdicts_gpu_->cpu_data());
  const Dtype* labels = positions > 0 ? bottom[1]->cpu_data() : nullptr;
  std::vector<Dtype> per_class(top.size() > 1 ? num_classes : 0, Dtype(0));
  std::fill(class_counts_.begin(), class_counts_.end(), 0);
  int correct = 0;
  int count = 0;
  for (long long p = 0; p < positions; ++p) {
    if (verdicts[p] == -1) continue;
    const int label = static_cast<int>(labels[p]);
    DOPPIO_ENSURE(verdicts[p] != -2)
        << this->Describe() << ": label value " << label << " (at label index " << p
        << ") is outside the class range [0, " << num_classes << ")";
    ++class_counts_[label];
    ++count;
    if (verdicts[p] == 1) {
      ++correct;
      if (!per_class.empty()) per_class[label] += 1;
    }
  }
  top[0]->mutable_cpu_data()[0] = count == 0 ? Dtype(0) : Dtype(correct) / Dtype(count);
  if (top.size() > 1) {
    Dtype* out = top[1]->mutable_cpu_data();
    for (int c = 0; c < num_classes; ++c) {
      out[c] = class_counts_[c] == 0 ? Dtype(0) : per_class[c] / Dtype(class_counts_[c]);
    }
  }
}

template <typename Dtype>
void AccuracyLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                        const BlobVec& bottom) {
  // No gradient: the same check as on the CPU.
  this->Backward_cpu(top, propagate_down, bottom);
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(AccuracyLayer);

}  // namespace doppio
