#pragma once

#ifdef DOPPIO_WITH_ONEDNN

#include <vector>

#include "doppio/layers/concat_layer.hpp"
#include "doppio/layers/onednn_layer.hpp"
#include "doppio/layers/onednn_tensor.hpp"

namespace doppio {

// Concat on oneDNN (engine ONEDNN, float) along any axis: each blob is seen as (the axes
// before the concat axis, the concat axis, the axes after it). Forward is oneDNN's concat;
// Backward, a split, is one reorder per bottom from its window of the top diff. A single
// bottom passes through as on the CAFFE engine (the top shares its buffers). Where every
// bottom arrives in a oneDNN layout (4-d, on the channels), it concatenates those as they
// are into a top in oneDNN's layout, and gives each bottom diff its bottom's layout.
class OnednnConcatLayer : public OnednnLayer<ConcatLayer<float>> {
 public:
  explicit OnednnConcatLayer(const LayerParameter& param) : OnednnLayer(param) {}
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;

 private:
  // The layouts the bottoms with values arrive in, where all are oneDNN's; else none.
  std::vector<dnnl::memory::desc> BlockedSources(const BlobVec& bottom,
                                                 const Blob<float>& top) const;
  // The primitives for bottoms in the `blocked` layouts, or in Caffe's where it is empty.
  void Prepare(const BlobVec& bottom, const Blob<float>& top,
               const std::vector<dnnl::memory::desc>& blocked);

  std::vector<std::vector<int>> prepared_shapes_;
  // The bottoms with values (an empty one adds nothing and has no gradient to take).
  std::vector<int> parts_;
  // The layouts the primitives are for (empty: Caffe's), and ones oneDNN refused.
  std::vector<dnnl::memory::desc> blocked_, refused_;
  dnnl::concat forward_;
  OnednnTensor dst_, top_diff_;
  // Per entry of parts_: the bottom, its diff, its window of the top diff, and the reorder
  // from that window to the diff.
  std::vector<OnednnTensor> srcs_, diff_srcs_;
  std::vector<dnnl::memory> windows_;
  std::vector<dnnl::reorder> splits_;
};

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
