#include "doppio/layers/onednn_concat_layer.hpp"

#ifdef DOPPIO_WITH_ONEDNN

#include <algorithm>

#include "doppio/core/layer_registry.hpp"

namespace doppio {

void OnednnConcatLayer::Reshape(const BlobVec& bottom, const BlobVec& top) {
  ConcatLayer<float>::Reshape(bottom, top);
  std::vector<std::vector<int>> shapes;
  for (const auto* b : bottom) shapes.push_back(b->shape());
  if (bottom.size() == 1 || shapes == prepared_shapes_ || top[0]->count() == 0) return;
  Build("concat", [&] { Prepare(bottom, *top[0], {}); });
  prepared_shapes_ = shapes;
}

std::vector<dnnl::memory::desc> OnednnConcatLayer::BlockedSources(const BlobVec& bottom,
                                                                  const Blob<float>& top) const {
  if (!OnednnKeepsBlockedLayouts() || concat_axis_ != 1 || top.num_axes() != 4) return {};
  std::vector<dnnl::memory::desc> descs;
  for (const int i : parts_) {
    const OnednnLayout* held = OnednnLayoutOf(*bottom[i]->data());
    const auto& shape = bottom[i]->shape();
    // One data type for all: a bf16 (mixed precision) and an f32 input meet in Caffe's layout.
    if (held == nullptr || held->desc().dims() != dnnl::memory::dims(shape.begin(), shape.end()) ||
        (!descs.empty() && held->desc().data_type() != descs[0].data_type())) {
      return {};
    }
    descs.push_back(held->desc());
  }
  return descs;
}

void OnednnConcatLayer::Prepare(const BlobVec& bottom, const Blob<float>& top,
                                const std::vector<dnnl::memory::desc>& blocked) {
  // Caffe's layout: each blob as (the axes before the concat axis, the axis, those after).
  // Blocked: 4-d blobs in the layouts they arrive in, concatenated on the channels.
  const dnnl::memory::dim outer = num_concats_;
  const dnnl::memory::dim inner = concat_input_size_;
  auto dims_of = [&](const Blob<float>& blob) -> dnnl::memory::dims {
    if (!blocked.empty()) return {blob.shape(0), blob.shape(1), blob.shape(2), blob.shape(3)};
    return {outer, blob.shape(concat_axis_), inner};
  };
  std::vector<int> parts;
  std::vector<dnnl::memory::desc> src_descs;
  for (std::size_t i = 0; i < bottom.size(); ++i) {
    if (bottom[i]->shape(concat_axis_) == 0) continue;
    parts.push_back(static_cast<int>(i));
    src_descs.push_back(blocked.empty() ? OnednnPlainDesc(dims_of(*bottom[i]))
                                        : blocked[src_descs.size()]);
  }
  const auto top_plain = OnednnPlainDesc(dims_of(top));
  const auto dst_request =
      blocked.empty()
          ? top_plain
          : dnnl::memory::desc(dims_of(top), blocked[0].data_type(), dnnl::memory::format_tag::any);
  const dnnl::concat::primitive_desc pd(dst_request, 1, src_descs, engine());
  const auto dst = pd.dst_desc();
  std::vector<OnednnTensor> srcs(parts.size()), diff_srcs(parts.size());
  std::vector<dnnl::memory> windows;
  std::vector<dnnl::reorder> splits;
  dnnl::memory::dim offset = 0;
  for (std::size_t k = 0; k < parts.size(); ++k) {
    const Blob<float>& blob = *bottom[parts[k]];
    const auto plain = OnednnPlainDesc(dims_of(blob));
    dnnl::memory::dims offsets(dst.dims().size(), 0);
    offsets[1] = offset;
    const auto window = dst.submemory_desc(dims_of(blob), offsets);
    srcs[k].Init(engine(), plain, src_descs[k]);
    diff_srcs[k].Init(engine(), plain, src_descs[k]);
    windows.push_back(dnnl::memory(window, engine(), DNNL_MEMORY_NONE));
    splits.emplace_back(dnnl::reorder::primitive_desc(engine(), window, engine(), src_descs[k]));
    offset += blob.shape(concat_axis_);
  }
  forward_ = dnnl::concat(pd);
  dst_.Init(engine(), top_plain, dst);
  top_diff_.Init(engine(), top_plain, dst);
  parts_ = parts;
  srcs_ = std::move(srcs);
  diff_srcs_ = std::move(diff_srcs);
  windows_ = std::move(windows);
  splits_ = std::move(splits);
  blocked_ = blocked;
}

void OnednnConcatLayer::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  if (bottom.size() == 1 || top[0]->count() == 0) return;
  UseOnednnThreads();
  auto blocked = BlockedSources(bottom, *top[0]);
  if (blocked == refused_) blocked.clear();
  if (blocked != blocked_) {
    try {
      Prepare(bottom, *top[0], blocked);
    } catch (const dnnl::error&) {
      // Windows of the blocked top that do not start on a whole block: Caffe's layout serves.
      refused_ = blocked;
      Build("concat", [&] { Prepare(bottom, *top[0], {}); });
    }
  }
  std::vector<OnednnTensor*> transient{dst_.ForWrite(*top[0]->data())};
  for (std::size_t k = 0; k < parts_.size(); ++k) {
    // A bottom concatenated twice may be turned to Caffe's layout by its first read.
    const Blob<float>* blob = bottom[parts_[k]];
    const bool repeated = std::count(bottom.begin(), bottom.end(), blob) > 1;
    transient.push_back(repeated ? &srcs_[k] : srcs_[k].ForRead(*blob->data()));
  }
  OnednnPlaceAllInWorkspace(transient);
  Run("concat forward", [&] {
    OnednnArgs args;
    for (std::size_t k = 0; k < parts_.size(); ++k) {
      args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(k)] =
          srcs_[k].Read(stream(), *bottom[parts_[k]]->data());
    }
    args[DNNL_ARG_DST] = dst_.Write(*top[0]->data());
    forward_.execute(stream(), args);
    dst_.Publish(stream());
  });
}

void OnednnConcatLayer::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                     const BlobVec& bottom) {
  if (bottom.size() == 1 || top[0]->count() == 0) return;
  // The top diff in the top's layout of Forward, whose windows the splits read.
  std::vector<OnednnTensor*> transient{&top_diff_};
  for (auto& diff_src : diff_srcs_) transient.push_back(&diff_src);
  OnednnPlaceAllInWorkspace(transient);
  Run("concat backward (reorder)", [&] {
    void* diff = top_diff_.Read(stream(), *top[0]->diff()).get_data_handle();
    for (std::size_t k = 0; k < parts_.size(); ++k) {
      const int i = parts_[k];
      if (!propagate_down[i]) continue;
      windows_[k].set_data_handle(diff);
      dnnl::memory diff_src = diff_srcs_[k].Write(*bottom[i]->diff());
      splits_[k].execute(stream(), windows_[k], diff_src);
      diff_srcs_[k].Publish(stream());
    }
  });
}

DOPPIO_REGISTER_LAYER_ENGINE_FLOAT_IF(Concat, ONEDNN, OnednnConcatLayer, nullptr);

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
