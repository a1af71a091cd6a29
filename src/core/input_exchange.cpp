#include "doppio/core/input_exchange.hpp"

namespace doppio {

template <typename Dtype>
void InputExchange<Dtype>::Exchange(Blob<Dtype>* blob) {
  exchanged_ = false;
  const std::shared_ptr<SyncedMemory>& data = blob->data();
  const std::size_t bytes = blob->count() * sizeof(Dtype);
  // use_count: a Split's tops share their bottom's buffer, and would keep reading the input.
  if (!kept_ || !data || data.use_count() != 1 || data->is_view() || data->size() != bytes ||
      kept_->size() != bytes || !WantsExchange(*data)) {
    return;
  }
  blob->ExchangeData(&kept_);
  exchanged_ = true;
  ++exchanges_;
}

template <typename Dtype>
void InputExchange<Dtype>::SizeKept(std::size_t bytes) {
  if (!kept_ || kept_->size() != bytes) kept_ = std::make_shared<SyncedMemory>(bytes);
}

DOPPIO_INSTANTIATE_CLASS(InputExchange);

}  // namespace doppio
