#pragma once

// What the oneDNN engine's fusion pass (src/layers/onednn_fusion.cpp) asks of a layer whose
// primitive can compute the ReLU after it as an eltwise_relu post-op (builds with oneDNN only).
#ifdef DOPPIO_WITH_ONEDNN

#include <oneapi/dnnl/dnnl.hpp>

namespace doppio {

class OnednnReLUFusable {
 public:
  virtual ~OnednnReLUFusable() = default;
  // Whether FuseReLU may be called: one top, computed by oneDNN.
  virtual bool CanFuseReLU() const = 0;
  // From the next Forward on, the output is max(x, 0) + negative_slope * min(x, 0) of what
  // it was, computed by the layer's primitive. negative_slope >= 0 keeps each output's sign,
  // which is all the ReLU's Backward reads.
  void FuseReLU(float negative_slope) {
    fuse_relu_ = true;
    relu_slope_ = negative_slope;
    RecreateForward();
  }

 protected:
  // Recreates the forward primitive, where one exists, with the post-op.
  virtual void RecreateForward() = 0;
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
