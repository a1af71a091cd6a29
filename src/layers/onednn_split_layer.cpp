#include "doppio/layers/onednn_split_layer.hpp"

#ifdef DOPPIO_WITH_ONEDNN

#include "doppio/core/layer_registry.hpp"

namespace doppio {

dnnl::memory::desc OnednnSplitLayer::SharedDiffLayout(const BlobVec& top) const {
  const OnednnLayout* first = OnednnLayoutOf(*top[0]->diff());
  if (first == nullptr) return dnnl::memory::desc();
  for (const Blob<float>* blob : top) {
    const OnednnLayout* held = OnednnLayoutOf(*blob->diff());
    if (held == nullptr || held->desc() != first->desc()) return dnnl::memory::desc();
  }
  return first->desc();
}

void OnednnSplitLayer::Prepare(const dnnl::memory::desc& desc, std::size_t tops) {
  const std::vector<float> scales(tops, 1.f);
  const std::vector<dnnl::memory::desc> descs(tops, desc);
  sum_ = dnnl::sum(dnnl::sum::primitive_desc(desc, scales, descs, engine()));
  // One memory object each: copies of a dnnl::memory share one handle.
  top_diffs_.clear();
  for (std::size_t i = 0; i < tops; ++i)
    top_diffs_.push_back(dnnl::memory(desc, engine(), DNNL_MEMORY_NONE));
  bottom_diff_.Init(engine(), OnednnPlainDesc(desc.dims()), desc);
  prepared_desc_ = desc;
  prepared_tops_ = tops;
}

void OnednnSplitLayer::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                    const BlobVec& bottom) {
  if (!propagate_down[0] || bottom[0]->count() == 0) return;
  const dnnl::memory::desc desc = SharedDiffLayout(top);
  if (!desc) {
    SplitLayer<float>::Backward_cpu(top, propagate_down, bottom);
    return;
  }
  if (desc != prepared_desc_ || top.size() != prepared_tops_) {
    Build("sum of the top diffs", [&] { Prepare(desc, top.size()); });
  }
  OnednnPlaceInWorkspace(bottom_diff_.ForWrite(*bottom[0]->diff()));
  Run("sum of the top diffs", [&] {
    OnednnArgs args;
    for (std::size_t i = 0; i < top.size(); ++i) {
      top_diffs_[i].set_data_handle(const_cast<void*>(top[i]->diff()->raw_cpu_data()));
      args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i)] = top_diffs_[i];
    }
    args[DNNL_ARG_DST] = bottom_diff_.Write(*bottom[0]->diff());
    sum_.execute(stream(), args);
    bottom_diff_.Publish(stream());
  });
}

DOPPIO_REGISTER_LAYER_ENGINE_FLOAT_IF(Split, ONEDNN, OnednnSplitLayer, nullptr);

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
