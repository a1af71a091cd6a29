#pragma once

#ifdef DOPPIO_WITH_ONEDNN

#include <string>
#include <vector>

#include "doppio/layers/eltwise_layer.hpp"
#include "doppio/layers/onednn_tensor.hpp"

namespace doppio {

// Eltwise SUM on oneDNN (engine ONEDNN, float), with the coefficients: Forward is oneDNN's
// sum with them as scales, Backward gives each bottom coeff * top diff (an eltwise linear
// map). PROD and MAX are not oneDNN primitives and stay on the CAFFE engine. Forward runs in
// the oneDNN layout all bottoms arrive in (else Caffe's), Backward in the one the top diff
// arrives in, and each writes its results in the layout it ran in.
class OnednnEltwiseLayer : public EltwiseLayer<float> {
 public:
  explicit OnednnEltwiseLayer(const LayerParameter& param) : EltwiseLayer<float>(param) {}
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

  // Why the engine cannot run a configuration ("" when it can), for the registry.
  static std::string Unsupported(const LayerParameter& param);

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;

 private:
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream_{engine_};
  // The primitives for blobs in layout `desc` (OnednnElementwiseDesc).
  void PrepareForward(const dnnl::memory::desc& desc, std::size_t bottoms);
  void PrepareBackward(const dnnl::memory::desc& desc);

  int prepared_count_ = -1;
  dnnl::memory::desc forward_desc_, backward_desc_;
  dnnl::sum forward_;
  OnednnTensor dst_, diff_dst_, diff_src_;
  std::vector<OnednnTensor> srcs_;
  // Per bottom: diff = coeff * top diff.
  std::vector<dnnl::eltwise_forward> scales_;
};

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
