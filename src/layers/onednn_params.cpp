#include "doppio/layers/onednn_params.hpp"

#ifdef DOPPIO_WITH_ONEDNN

#include "doppio/util/math_functions.hpp"

namespace doppio {

void OnednnParamData::Init(const dnnl::engine& engine, const dnnl::memory::desc& user,
                           const dnnl::memory::desc& primitive, bool kept) {
  tensor_.Init(engine, user, primitive);
  cache_ = kept && tensor_.reordered() ? dnnl::memory(primitive, engine) : dnnl::memory();
  if (cache_) tensor_.Keep(cache_.get_data_handle());
  valid_ = false;
}

const dnnl::memory& OnednnParamData::Get(dnnl::stream& stream, const Blob<float>& blob) {
  const float* data = blob.cpu_data();
  if (!cache_) return tensor_.Read(stream, data);
  const SyncedMemory& storage = blob.data()->storage();
  if (!valid_ || storage_ != &storage || writes_ != storage.write_count()) {
    tensor_.Read(stream, data);
    storage_ = &storage;
    writes_ = storage.write_count();
    valid_ = true;
  }
  return tensor_.primitive();
}

float OnednnParamMagnitude::Get(const Blob<float>& blob) {
  const float* data = blob.cpu_data();
  const SyncedMemory& storage = blob.data()->storage();
  if (storage_ != &storage || writes_ != storage.write_count()) {
    magnitude_ = OnednnMaxMagnitude(data, blob.count());
    storage_ = &storage;
    writes_ = storage.write_count();
  }
  return magnitude_;
}

void OnednnParamGradient::Init(const dnnl::engine& engine, const dnnl::memory::desc& primitive,
                               const dnnl::memory::desc& user) {
  scratch_ = dnnl::memory(primitive, engine, DNNL_MEMORY_NONE);
  count_ = user.get_size() / sizeof(float);
  if (primitive == user) {
    plain_ = dnnl::memory();
    return;
  }
  plain_ = dnnl::memory(user, engine, DNNL_MEMORY_NONE);
  to_plain_ = dnnl::reorder(scratch_, plain_);
}

void OnednnParamGradient::Place(void* at) {
  if (!scratch_) return;
  scratch_.set_data_handle(at);
  if (plain_) {
    plain_.set_data_handle(static_cast<char*>(at) + OnednnAligned(scratch_.get_desc().get_size()));
  }
}

void OnednnParamGradient::AddTo(dnnl::stream& stream, float* diff) {
  const dnnl::memory* sum = &scratch_;
  if (plain_) {
    to_plain_.execute(stream, scratch_, plain_);
    stream.wait();
    sum = &plain_;
  }
  cpu_axpy(static_cast<int>(count_), 1.f, static_cast<const float*>(sum->get_data_handle()), diff);
}

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
