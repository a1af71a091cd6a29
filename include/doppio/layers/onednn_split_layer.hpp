#pragma once

#ifdef DOPPIO_WITH_ONEDNN

#include <vector>

#include "doppio/layers/onednn_layer.hpp"
#include "doppio/layers/onednn_tensor.hpp"
#include "doppio/layers/split_layer.hpp"

namespace doppio {

// Split on oneDNN (engine ONEDNN, float; the net's DEFAULT for the Splits it inserts). Forward
// shares the bottom as Caffe's does. Backward sums the top diffs with oneDNN's sum where they
// all arrive in one oneDNN layout (a ResNet's shortcut and first branch convolution both
// hand back blocked diffs) and leaves the bottom diff in that layout, so that no diff is
// converted to Caffe's layout and back around the sum; otherwise it sums in Caffe's layout
// with the CAFFE engine's kernel.
class OnednnSplitLayer : public OnednnLayer<SplitLayer<float>> {
 public:
  explicit OnednnSplitLayer(const LayerParameter& param) : OnednnLayer(param) {}

 protected:
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;

 private:
  // The oneDNN layout every top diff is held in, or a zero desc where they differ or one is
  // in Caffe's layout.
  dnnl::memory::desc SharedDiffLayout(const BlobVec& top) const;
  void Prepare(const dnnl::memory::desc& desc, std::size_t tops);

  dnnl::memory::desc prepared_desc_;
  std::size_t prepared_tops_ = 0;
  dnnl::sum sum_;
  std::vector<dnnl::memory> top_diffs_;
  OnednnTensor bottom_diff_;
};

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
