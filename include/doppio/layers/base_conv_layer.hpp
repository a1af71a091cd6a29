#pragma once

#include <cstddef>
#include <vector>

#include "doppio/core/blob.hpp"
#include "doppio/core/layer.hpp"

namespace doppio {

// What Convolution and Deconvolution share: reading ConvolutionParameter, the parameter
// blobs, and the im2col + GEMM kernels. Both are written in terms of a "convolution" that
// maps an image with conv_in_channels_ channels of spatial size conv_input_shape_ to
// conv_out_channels_ channels of spatial size conv_out_spatial_dim_. Convolution runs it
// forward (bottom -> top); Deconvolution runs its transpose (bottom is the convolution's
// output, top its input). Only two spatial axes are supported.
template <typename Dtype>
class BaseConvolutionLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::BlobVec;
  explicit BaseConvolutionLayer(const LayerParameter& param) : Layer<Dtype>(param) {}

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

  int MinBottomBlobs() const override { return 1; }
  int MinTopBlobs() const override { return 1; }
  bool EqualNumBottomTopBlobs() const override { return true; }

 protected:
  // The passes of both layers: chunks of images through the kernels below, in the direction
  // reverse_dimensions() gives. Convolution maps its bottom forward and takes gradients
  // through the transpose; Deconvolution maps its bottom through the transpose, so its
  // gradients run forward and the roles of bottom and top in the weight gradient swap.
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#ifdef DOPPIO_WITH_CUDA
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#endif

  // The kernels below work on `count` consecutive images at once (at most
  // images_per_gemm()). Images whose outputs are small are laid side by side in one wide
  // column matrix, so that each GEMM is large enough to run BLAS efficiently; the product is
  // then scattered back to the images. "input" is the side im2col reads (conv_in_channels_
  // per image, conv_input_dim_ values apart), "output" the other (conv_output_dim_ apart).
  //
  // Forward and Backward split the batch's chunks of images over the current thread pool
  // (util/thread_pool.hpp); every part has its own column and gather buffers, chosen by
  // `part`. prepare_parts() takes them from the calling thread's workspace and must run
  // before a parallel region, since the pool's threads have workspaces of their own.

  // Sizes the work buffers for `parts` parts (the most a region may use) and caches their
  // addresses, those of the bias multiplier included, for the kernels.
  void prepare_parts(int parts);
  // The number of chunks of images_per_gemm() images the batch splits into.
  int num_chunks() const { return (num_ + images_per_gemm_ - 1) / images_per_gemm_; }

  // output[g] = W[g] * im2col(input)[g]: the convolution's forward direction.
  void forward_cpu_gemm(const Dtype* input, int count, const Dtype* weights, Dtype* output,
                        int part, bool skip_im2col = false);
  // input = col2im(W^T * output): the transpose, i.e. the gradient with respect to the input.
  // output_gathered: output is already in the gather buffer (from weight_cpu_gemm).
  void backward_cpu_gemm(const Dtype* output, int count, const Dtype* weights, Dtype* input,
                         int part, bool output_gathered = false);
  // weights += output * im2col(input)^T, the weight gradient.
  void weight_cpu_gemm(const Dtype* input, const Dtype* output, int count, Dtype* weights, int part,
                       bool skip_im2col = false);
  // output += bias, for one image.
  void forward_cpu_bias(Dtype* output, const Dtype* bias);
  // bias += sum over positions of output, for one image.
  void backward_cpu_bias(Dtype* bias, const Dtype* output);
#ifdef DOPPIO_WITH_CUDA
  // The GPU kernels work on one image at a time (im2col + one GEMM per group) with dense
  // column buffers; same directions as the CPU ones.
  void forward_gpu_gemm(const Dtype* input, const Dtype* weights, Dtype* output);
  void backward_gpu_gemm(const Dtype* output, const Dtype* weights, Dtype* input);
  void weight_gpu_gemm(const Dtype* input, const Dtype* output, Dtype* weights);
  // output += bias for all num_ images; bias += the sum over images and positions of output.
  void forward_gpu_bias(Dtype* output, const Dtype* bias);
  void backward_gpu_bias(Dtype* bias, const Dtype* output);
#endif
  int images_per_gemm() const { return images_per_gemm_; }

  // Parameter gradients of a parallel backward pass: part 0 accumulates straight into the
  // parameter diffs, every other part into a private zeroed copy, and reduce_param_diffs
  // adds those copies to the diffs in part order, so the sum depends only on the number of
  // parts. param_diff_part returns where `part` accumulates the gradient of parameter blob
  // `index` (nullptr where that diff is not computed).
  void prepare_param_diffs(int parts, Dtype* weight_diff, Dtype* bias_diff);
  Dtype* param_diff_part(int index, int part) const;
  void reduce_param_diffs(int parts);

  // Output spatial shape from the input's (conv: smaller, deconv: larger).
  virtual void compute_output_shape() = 0;
  // False for Convolution (bottom is the convolution's input), true for Deconvolution.
  virtual bool reverse_dimensions() const = 0;

  // Read from ConvolutionParameter.
  int kernel_h_ = 0, kernel_w_ = 0;
  int stride_h_ = 1, stride_w_ = 1;
  int pad_h_ = 0, pad_w_ = 0;
  int dilation_h_ = 1, dilation_w_ = 1;
  int channel_axis_ = 1;
  int num_output_ = 0;
  int group_ = 1;
  bool bias_term_ = true;
  bool is_1x1_ = false;

  // From the bottom shape.
  int num_ = 0;                    // images: product of the axes before channel_axis_
  int channels_ = 0;               // bottom channels
  int input_shape_[2] = {0, 0};    // bottom spatial shape
  std::vector<int> output_shape_;  // top spatial shape, set by compute_output_shape()
  int bottom_dim_ = 0;             // values per image in bottom
  int top_dim_ = 0;                // values per image in top
  int out_spatial_dim_ = 0;        // top spatial size (for the bias)

 private:
  // im2col / col2im of `count` images into / from a column matrix with count * spatial
  // columns.
  void conv_im2col_cpu(const Dtype* data, int count, Dtype* col) const;
  // col2im may clear entries of `col` (scratch) that belong to the padding.
  void conv_col2im_cpu(Dtype* col, int count, Dtype* data) const;
#ifdef DOPPIO_WITH_CUDA
  // One image's column matrix on the GPU: the input itself for a 1x1 convolution, else its
  // im2col in the column buffer.
  const Dtype* conv_columns_gpu(const Dtype* input);
  // Room for one image's column matrix on the GPU.
  Dtype* col_buffer_gpu();
#endif
  // Copies `count` images' outputs (channels x spatial each) to / from the gather buffer's
  // channels x (count * spatial) layout.
  void gather_output(const Dtype* output, int count, Dtype* buffer) const;
  void scatter_output(const Dtype* buffer, int count, Dtype* output) const;

  int conv_in_channels_ = 0;
  int conv_out_channels_ = 0;
  int conv_input_shape_[2] = {0, 0};  // spatial shape of the image im2col reads
  int conv_out_spatial_dim_ = 0;      // spatial size of the convolution's output
  int kernel_dim_ = 0;                // rows of the column buffer per group
  int weight_offset_ = 0;
  int conv_input_dim_ = 0;   // values per image on the input side
  int conv_output_dim_ = 0;  // values per image on the output side
  int images_per_gemm_ = 1;

  Blob<Dtype> bias_multiplier_;
  // Columns per GEMM on the small path (see Reshape); 0 when not on it.
  int block_ = 0;
  // Whether the small path's weight gradient runs transposed (see Reshape).
  bool weight_t_ = false;
  // Per part, in values, carved from the host workspace by prepare_parts(): the column
  // matrix (kernel_dim_ * group_ x images_per_gemm_ * spatial), the gathered outputs
  // (conv_out_channels_ x images_per_gemm_ * spatial) and, on the small path, an image's
  // top diff transposed (positions x channels).
  size_t col_part_size_ = 0, gather_part_size_ = 0, top_t_part_size_ = 0;
  Dtype* col_data_ = nullptr;
  Dtype* gather_data_ = nullptr;
  Dtype* top_t_data_ = nullptr;
  const Dtype* bias_multiplier_data_ = nullptr;
  // Parts 1.. of a parallel backward: their weight and bias gradients (on the small path
  // every part's weight gradient, transposed).
  Blob<Dtype> weight_diff_parts_, bias_diff_parts_;
  Dtype* param_diff_[2] = {nullptr, nullptr};
  Dtype* param_diff_parts_[2] = {nullptr, nullptr};
};

}  // namespace doppio
