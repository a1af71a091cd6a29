#pragma once

// What the oneDNN engine's fusion passes (src/layers/onednn_fusion.cpp) ask of the layers they
// fuse (builds with oneDNN only): a host computes, inside its own Forward (and Backward), what
// one or more later layers, its guests, would; the guests' own calls then do nothing.
#ifdef DOPPIO_WITH_ONEDNN

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <string>

namespace doppio {

// A layer that computes later layers' Forward in its own counts its Forwards, so that a guest
// can tell whether its host ran before it, and says whether it ran its fused ReLU as Caffe's
// kernel (below), so that the ReLU's Backward follows Caffe's kernel too.
class OnednnFusionHost {
 public:
  virtual ~OnednnFusionHost() = default;
  std::uint64_t forwards() const { return forwards_; }
  // Whether the last Forward computed the fused ReLU with Caffe's kernel.
  bool ran_caffe_relu() const { return caffe_relu_; }

 protected:
  void CountForward() { ++forwards_; }
  void SetRanCaffeReLU(bool caffe) { caffe_relu_ = caffe; }

 private:
  std::uint64_t forwards_ = 0;
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

// A layer whose Forward its host computes. Net::ForwardFromTo starting at a guest (or between
// its host and it) would leave its top as the host last wrote it, not as the guest would have
// computed it from what its bottom holds now: the guest's Forward refuses that (CheckHostRan).
class OnednnFusionGuest {
 public:
  virtual ~OnednnFusionGuest() = default;
  void FuseInto(const OnednnFusionHost& host, const std::string& host_name) {
    host_ = &host;
    host_name_ = host_name;
    seen_forwards_ = host.forwards();
  }
  bool fused() const { return host_ != nullptr; }

 protected:
  // Throws Error naming `guest` (the layer's Describe()) and its host unless the host ran its
  // Forward since this guest's last one.
  void CheckHostRan(const std::string& guest);
  // Whether the host's last Forward computed this guest's ReLU with Caffe's kernel.
  bool HostRanCaffeReLU() const { return host_->ran_caffe_relu(); }

 private:
  const OnednnFusionHost* host_ = nullptr;
  std::string host_name_;
  std::uint64_t seen_forwards_ = 0;
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
