#pragma once

#ifdef DOPPIO_WITH_ONEDNN

#include <cstdint>
#include <string>
#include <vector>

#include "doppio/layers/eltwise_layer.hpp"
#include "doppio/layers/onednn_fusion.hpp"
#include "doppio/layers/onednn_layer.hpp"
#include "doppio/layers/onednn_tensor.hpp"

namespace doppio {

// Eltwise SUM on oneDNN (engine ONEDNN, float), with the coefficients: Forward is oneDNN's
// sum with them as scales, Backward gives each bottom coeff * top diff (an eltwise linear
// map). PROD and MAX are not oneDNN primitives and stay on the CAFFE engine. Forward runs in
// the oneDNN layout all bottoms arrive in (else Caffe's), Backward in the one the top diff
// arrives in, and each writes its results in the layout it ran in.
// A bottom of coefficient 1 gets a copy of the top diff: where the fusion passes
// (onednn_fusion.cpp) find that its one reader can do without, the copy is not made.
// Two bottoms of coefficient 1 (ResNet's shortcut) can compute the in-place ReLU after them
// (OnednnReLUFusable): Caffe's ReLU of their sum in one pass of Doppio's own, as fast as
// oneDNN's binary add with the ReLU post-op, which makes a NaN 0.
class OnednnEltwiseLayer : public OnednnLayer<EltwiseLayer<float>>, public OnednnReLUFusable {
 public:
  explicit OnednnEltwiseLayer(const LayerParameter& param) : OnednnLayer(param) {}
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

  // Why the engine cannot run a configuration ("" when it can), for the registry.
  static std::string Unsupported(const LayerParameter& param);

  bool CanFuseReLU() const override {
    return coeffs_.size() == 2 && coeffs_[0] == 1.f && coeffs_[1] == 1.f;
  }
  float coeff(int i) const { return coeffs_[i]; }
  // From the next Reshape on, bottom i (coefficient 1) shares the top's diff: for a bottom
  // whose diff only a Split reads, which then reads the top's.
  void ShareDiffWithTop(int i);
  // From the next Backward on, bottom i's diff (coefficient 1) is left unwritten: its reader
  // (a fused BatchNorm) reads the top's diff where LeftToReader says so.
  void LeaveDiffToReader(int i);
  // Whether the last Backward left `bottom`'s diff to its reader and nothing has written it
  // since (a user's write, or a Backward of its reader since, makes the diff its own again).
  bool LeftToReader(const Blob<float>& bottom) const;

 protected:
  bool RunsBf16() const override { return true; }
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;

 private:
  // The primitives for blobs in layout `desc` (OnednnElementwiseDesc).
  void PrepareForward(const dnnl::memory::desc& desc, std::size_t bottoms);
  void PrepareBackward(const dnnl::memory::desc& desc);
  void RecreateForward() override { forward_desc_ = dnnl::memory::desc(); }

  int prepared_count_ = -1;
  dnnl::memory::desc forward_desc_, backward_desc_;
  // The sum (not made where the ReLU is fused).
  dnnl::sum forward_;
  OnednnTensor dst_, diff_dst_, diff_src_;
  std::vector<OnednnTensor> srcs_;
  // Per bottom: diff = coeff * top diff.
  std::vector<dnnl::eltwise_forward> scales_;
  enum class BottomDiff { kWritten, kShared, kLeft };
  std::vector<BottomDiff> bottom_diffs_;
  // The diffs the last Backward left, and their write counts then.
  struct LeftDiff {
    const Blob<float>* blob;
    const SyncedMemory* diff;
    std::uint64_t writes;
  };
  std::vector<LeftDiff> left_;
};

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
