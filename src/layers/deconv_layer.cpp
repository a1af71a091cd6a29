#include "doppio/layers/deconv_layer.hpp"

#include <algorithm>

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/thread_pool.hpp"

namespace doppio {

template <typename Dtype>
void DeconvolutionLayer<Dtype>::compute_output_shape() {
  const int kernel[2] = {this->kernel_h_, this->kernel_w_};
  const int pad[2] = {this->pad_h_, this->pad_w_};
  const int stride[2] = {this->stride_h_, this->stride_w_};
  const int dilation[2] = {this->dilation_h_, this->dilation_w_};
  const char* axis_name[2] = {"height", "width"};
  this->output_shape_.resize(2);
  for (int i = 0; i < 2; ++i) {
    const int in = this->input_shape_[i];
    const int extent = dilation[i] * (kernel[i] - 1) + 1;
    const int out = stride[i] * (in - 1) + extent - 2 * pad[i];
    DOPPIO_ENSURE(out > 0) << this->Describe() << ": output " << axis_name[i] << " " << stride[i]
                           << " * (" << in << " - 1) + " << extent << " - 2 * " << pad[i] << " = "
                           << out << " is not positive; the padding is too large";
    this->output_shape_[i] = out;
  }
}

template <typename Dtype>
void DeconvolutionLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  if (this->num_ == 0) return;  // an empty batch has no buffers to touch
  const Dtype* weight = this->blobs_[0]->cpu_data();
  const Dtype* bias = this->bias_term_ ? this->blobs_[1]->cpu_data() : nullptr;
  const int chunk = this->images_per_gemm();
  const int chunks = this->num_chunks();
  this->prepare_parts(ParallelPartsFor(chunks, 1));
  for (size_t i = 0; i < bottom.size(); ++i) {
    const Dtype* bottom_data = bottom[i]->cpu_data();
    Dtype* top_data = top[i]->mutable_cpu_data();
    ParallelFor(chunks, 1, [&](int begin, int end, int part) {
      for (int c = begin; c < end; ++c) {
        const int n = c * chunk;
        const int count = std::min(chunk, this->num_ - n);
        const size_t in_offset = static_cast<size_t>(n) * this->bottom_dim_;
        const size_t out_offset = static_cast<size_t>(n) * this->top_dim_;
        this->backward_cpu_gemm(bottom_data + in_offset, count, weight, top_data + out_offset,
                                part);
        if (!bias) continue;
        for (int b = 0; b < count; ++b) {
          this->forward_cpu_bias(top_data + out_offset + static_cast<size_t>(b) * this->top_dim_,
                                 bias);
        }
      }
    });
  }
}

template <typename Dtype>
void DeconvolutionLayer<Dtype>::Backward_cpu(const BlobVec& top,
                                             const std::vector<bool>& propagate_down,
                                             const BlobVec& bottom) {
  if (this->num_ == 0) return;
  const Dtype* weight = this->blobs_[0]->cpu_data();
  const bool weight_grad = this->param_propagate_down(0);
  const bool bias_grad = this->bias_term_ && this->param_propagate_down(1);
  const int chunk = this->images_per_gemm();
  const int chunks = this->num_chunks();
  const int parts = ParallelPartsFor(chunks, 1);
  this->prepare_parts(parts);
  this->prepare_param_diffs(parts, weight_grad ? this->blobs_[0]->mutable_cpu_diff() : nullptr,
                            bias_grad ? this->blobs_[1]->mutable_cpu_diff() : nullptr);
  for (size_t i = 0; i < top.size(); ++i) {
    if (!weight_grad && !bias_grad && !propagate_down[i]) continue;
    const Dtype* top_diff = top[i]->cpu_diff();
    const Dtype* bottom_data = bottom[i]->cpu_data();
    Dtype* bottom_diff = propagate_down[i] ? bottom[i]->mutable_cpu_diff() : nullptr;
    ParallelFor(chunks, 1, [&](int begin, int end, int part) {
      Dtype* weight_diff = this->param_diff_part(0, part);
      Dtype* bias_diff = this->param_diff_part(1, part);
      for (int c = begin; c < end; ++c) {
        const int n = c * chunk;
        const int count = std::min(chunk, this->num_ - n);
        const size_t in_offset = static_cast<size_t>(n) * this->bottom_dim_;
        const size_t out_offset = static_cast<size_t>(n) * this->top_dim_;
        if (bias_diff) {
          for (int b = 0; b < count; ++b) {
            this->backward_cpu_bias(
                bias_diff, top_diff + out_offset + static_cast<size_t>(b) * this->top_dim_);
          }
        }
        if (weight_diff) {
          this->weight_cpu_gemm(top_diff + out_offset, bottom_data + in_offset, count, weight_diff,
                                part);
        }
        if (bottom_diff) {
          // The weight gradient's im2col of the top diff is reused.
          this->forward_cpu_gemm(top_diff + out_offset, count, weight, bottom_diff + in_offset,
                                 part, weight_diff != nullptr);
        }
      }
    });
  }
  this->reduce_param_diffs(parts);
}

DOPPIO_INSTANTIATE_CLASS(DeconvolutionLayer);
REGISTER_LAYER_CLASS(Deconvolution);

}  // namespace doppio
