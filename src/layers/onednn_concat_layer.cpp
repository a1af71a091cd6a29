#include "doppio/layers/onednn_concat_layer.hpp"

#ifdef DOPPIO_WITH_ONEDNN

#include "doppio/core/layer_registry.hpp"

namespace doppio {

void OnednnConcatLayer::Reshape(const BlobVec& bottom, const BlobVec& top) {
  ConcatLayer<float>::Reshape(bottom, top);
  std::vector<std::vector<int>> shapes;
  for (const auto* b : bottom) shapes.push_back(b->shape());
  if (bottom.size() == 1 || shapes == prepared_shapes_ || top[0]->count() == 0) return;
  UseOnednnThreads();
  OnednnCall(this->Describe(), "concat", [&] { Prepare(bottom, *top[0]); });
  prepared_shapes_ = shapes;
}

void OnednnConcatLayer::Prepare(const BlobVec& bottom, const Blob<float>& top) {
  const dnnl::memory::dim outer = num_concats_;
  const dnnl::memory::dim inner = concat_input_size_;
  const auto dst = OnednnPlainDesc({outer, top.shape(concat_axis_), inner});
  parts_.clear();
  srcs_.clear();
  windows_.clear();
  diff_srcs_.clear();
  splits_.clear();
  std::vector<dnnl::memory::desc> src_descs;
  dnnl::memory::dim offset = 0;
  for (std::size_t i = 0; i < bottom.size(); ++i) {
    const dnnl::memory::dim axis = bottom[i]->shape(concat_axis_);
    if (axis > 0) {
      const auto src = OnednnPlainDesc({outer, axis, inner});
      const auto window = dst.submemory_desc({outer, axis, inner}, {0, offset, 0});
      parts_.push_back(static_cast<int>(i));
      src_descs.push_back(src);
      srcs_.push_back(dnnl::memory(src, engine_, DNNL_MEMORY_NONE));
      diff_srcs_.push_back(dnnl::memory(src, engine_, DNNL_MEMORY_NONE));
      windows_.push_back(dnnl::memory(window, engine_, DNNL_MEMORY_NONE));
      splits_.emplace_back(dnnl::reorder::primitive_desc(engine_, window, engine_, src));
    }
    offset += axis;
  }
  forward_ = dnnl::concat(dnnl::concat::primitive_desc(dst, 1, src_descs, engine_));
  dst_ = dnnl::memory(dst, engine_, DNNL_MEMORY_NONE);
}

void OnednnConcatLayer::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  if (bottom.size() == 1 || top[0]->count() == 0) return;
  UseOnednnThreads();
  OnednnCall(this->Describe(), "concat forward", [&] {
    std::unordered_map<int, dnnl::memory> args;
    for (std::size_t k = 0; k < parts_.size(); ++k) {
      srcs_[k].set_data_handle(const_cast<float*>(bottom[parts_[k]]->cpu_data()));
      args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(k)] = srcs_[k];
    }
    dst_.set_data_handle(top[0]->mutable_cpu_data());
    args[DNNL_ARG_DST] = dst_;
    forward_.execute(stream_, args);
    stream_.wait();
  });
}

void OnednnConcatLayer::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                     const BlobVec& bottom) {
  if (bottom.size() == 1 || top[0]->count() == 0) return;
  UseOnednnThreads();
  OnednnCall(this->Describe(), "concat backward (reorder)", [&] {
    for (std::size_t k = 0; k < parts_.size(); ++k) {
      const int i = parts_[k];
      if (!propagate_down[i]) continue;
      windows_[k].set_data_handle(const_cast<float*>(top[0]->cpu_diff()));
      diff_srcs_[k].set_data_handle(bottom[i]->mutable_cpu_diff());
      splits_[k].execute(stream_, windows_[k], diff_srcs_[k]);
    }
    stream_.wait();
  });
}

DOPPIO_REGISTER_LAYER_ENGINE_FLOAT_IF(Concat, ONEDNN, OnednnConcatLayer, nullptr);

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
