#pragma once

#ifdef DOPPIO_WITH_ONEDNN

#include <vector>

#include "doppio/device/onednn.hpp"
#include "doppio/layers/concat_layer.hpp"

namespace doppio {

// Concat on oneDNN (engine ONEDNN, float) along any axis: each blob is seen as (the axes
// before the concat axis, the concat axis, the axes after it). Forward is oneDNN's concat;
// Backward, a split, is one reorder per bottom from its window of the top diff. A single
// bottom passes through as on the CAFFE engine (the top shares its buffers).
class OnednnConcatLayer : public ConcatLayer<float> {
 public:
  explicit OnednnConcatLayer(const LayerParameter& param) : ConcatLayer<float>(param) {}
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;

 private:
  void Prepare(const BlobVec& bottom, const Blob<float>& top);

  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream_{engine_};
  std::vector<std::vector<int>> prepared_shapes_;
  // The bottoms with values (an empty one adds nothing and has no gradient to take).
  std::vector<int> parts_;
  dnnl::concat forward_;
  dnnl::memory dst_;
  // Per entry of parts_: the bottom, its window of the top diff, and the reorder between.
  std::vector<dnnl::memory> srcs_, windows_, diff_srcs_;
  std::vector<dnnl::reorder> splits_;
};

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
