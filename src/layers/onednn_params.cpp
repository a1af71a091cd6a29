#include "doppio/layers/onednn_params.hpp"

#ifdef DOPPIO_WITH_ONEDNN

namespace doppio {

void OnednnCachedParam::Init(const dnnl::engine& engine, const dnnl::memory::desc& user,
                             const dnnl::memory::desc& primitive) {
  tensor_.Init(engine, user, primitive);
  cache_ = tensor_.reordered() ? dnnl::memory(primitive, engine) : dnnl::memory();
  if (cache_) tensor_.Place(cache_.get_data_handle());
  valid_ = false;
}

const dnnl::memory& OnednnCachedParam::Get(dnnl::stream& stream, const Blob<float>& blob) {
  const float* data = blob.cpu_data();
  if (!tensor_.reordered()) return tensor_.Read(stream, data);
  const SyncedMemory& storage = blob.data()->storage();
  if (!valid_ || storage_ != &storage || writes_ != storage.write_count()) {
    tensor_.Read(stream, data);
    storage_ = &storage;
    writes_ = storage.write_count();
    valid_ = true;
  }
  return tensor_.primitive();
}

void OnednnParamGradient::Init(const dnnl::engine& engine, const dnnl::memory::desc& primitive,
                               const dnnl::memory::desc& user) {
  scratch_ = dnnl::memory(primitive, engine, DNNL_MEMORY_NONE);
  user_ = dnnl::memory(user, engine, DNNL_MEMORY_NONE);
  dnnl::post_ops sum;
  sum.append_sum(1.f);
  dnnl::primitive_attr attr;
  attr.set_post_ops(sum);
  accumulate_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine, primitive, engine, user, attr));
}

void OnednnParamGradient::AddTo(dnnl::stream& stream, float* diff) {
  user_.set_data_handle(diff);
  accumulate_.execute(stream, scratch_, user_);
}

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
