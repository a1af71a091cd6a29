#pragma once

// What the oneDNN engine's fusion passes (src/layers/onednn_fusion.cpp) ask of the layers they
// fuse (builds with oneDNN only): a host computes, inside its own Forward (and Backward), what
// one or more later layers, its guests, would; the guests' own calls then do nothing.
#ifdef DOPPIO_WITH_ONEDNN

#include <oneapi/dnnl/dnnl.hpp>

#include "doppio/core/layer_fusion.hpp"

namespace doppio {

// A host (core/layer_fusion.hpp) that says whether it ran its fused ReLU as Caffe's kernel
// (below), so that the ReLU's Backward follows Caffe's kernel too.
class OnednnFusionHost : public FusionHost {
 public:
  // Whether the last Forward computed the fused ReLU with Caffe's kernel.
  bool ran_caffe_relu() const { return caffe_relu_; }

 protected:
  void SetRanCaffeReLU(bool caffe) { caffe_relu_ = caffe; }

 private:
  bool caffe_relu_ = false;
};

// oneDNN 2.6's ReLU post-ops (eltwise_relu of slope 0, clip, binary max) make a NaN 0, where
// Caffe's ReLU passes it on; no post-op keeps a NaN and also makes -inf 0. So a host whose
// output may hold a NaN runs its primitive without the post-op and Caffe's ReLU after it
// (OnednnReLUInPlace). An output holds no NaN where its inputs are finite and it cannot
// overflow on the way (inf - inf): OnednnBoundStaysFinite tells.
//
// Whether a value computed from finite values, at most `bound` in magnitude in exact
// arithmetic, stays finite in float: below FLT_MAX with a factor of 2^24 to spare, for what
// rounding, an order of summation or Winograd's transforms add. False for a NaN or infinity.
bool OnednnBoundStaysFinite(double bound);

// Caffe's ReLU (ReLUValue), in place, over every float of `memory` (in any layout, its
// padding included).
void OnednnReLUInPlace(const dnnl::memory& memory, float negative_slope);

// A guest of a oneDNN host.
class OnednnFusionGuest : public FusionGuest {
 protected:
  // Whether the host's last Forward computed this guest's ReLU with Caffe's kernel.
  bool HostRanCaffeReLU() const {
    return dynamic_cast<const OnednnFusionHost&>(host()).ran_caffe_relu();
  }
};

// A layer that can compute the ReLU after it in its own Forward: as its primitive's
// eltwise_relu post-op (a convolution), with Caffe's kernel on its small output (an inner
// product), or in its own loop (an Eltwise SUM).
class OnednnReLUFusable : public OnednnFusionHost {
 public:
  virtual ~OnednnReLUFusable() = default;
  // Whether FuseReLU may be called: one top, computed by oneDNN.
  virtual bool CanFuseReLU() const = 0;
  // From the next Forward on, the output is max(x, 0) + negative_slope * min(x, 0) of what
  // it was, computed by the layer's primitive (by Caffe's kernel after it where the output may
  // hold a NaN). negative_slope >= 0 keeps each output's sign, which is all the ReLU's
  // Backward reads.
  void FuseReLU(float negative_slope) {
    fuse_relu_ = true;
    relu_slope_ = negative_slope;
    RecreateForward();
  }

 protected:
  // Recreates the forward primitive, where one exists, with the post-op.
  virtual void RecreateForward() = 0;
  bool fuses_relu() const { return fuse_relu_; }
  float relu_slope() const { return relu_slope_; }
  // The attributes of the forward primitive: the post-op once FuseReLU was called.
  dnnl::primitive_attr PostOps() const {
    dnnl::primitive_attr attr;
    if (fuse_relu_) {
      dnnl::post_ops relu;
      relu.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, relu_slope_, 0.f);
      attr.set_post_ops(relu);
    }
    return attr;
  }

 private:
  bool fuse_relu_ = false;
  float relu_slope_ = 0.f;
};

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
