#pragma once

#ifdef DOPPIO_WITH_ONEDNN

#include <vector>

#include "doppio/device/onednn.hpp"
#include "doppio/layers/onednn_layer.hpp"
#include "doppio/layers/softmax_layer.hpp"

namespace doppio {

// Softmax on oneDNN (engine ONEDNN, float) over softmax_param.axis, in place or not: the
// blob is seen as (outer, channels, inner) and oneDNN normalises its middle axis. Backward
// reads the output, as the CAFFE engine does.
class OnednnSoftmaxLayer : public OnednnLayer<SoftmaxLayer<float>> {
 public:
  explicit OnednnSoftmaxLayer(const LayerParameter& param) : OnednnLayer(param) {}
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;

 private:
  std::vector<int> prepared_dims_;
  dnnl::softmax_forward forward_;
  dnnl::softmax_backward backward_;
  dnnl::memory src_, dst_, diff_dst_, diff_src_;
};

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
