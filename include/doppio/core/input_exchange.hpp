#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "doppio/core/blob.hpp"

namespace doppio {

// The buffer an in-place layer keeps its input in from Forward to Backward, filled by an
// exchange the net performs instead of a copy. A layer that overwrites its blob and reads the
// input again in Backward (oneDNN's fused BatchNorm) would otherwise copy the input every
// Forward; it never rebinds a blob the net holds itself.
//
// Just before the layer's Forward, Net::ForwardFromTo calls Exchange on the layer's blob: the
// blob takes the kept buffer (the last input, which Backward has read by then) for this
// Forward's output, and the kept buffer becomes the blob's old one, which holds the input.
// The net exchanges only where
// - the layer wants this input kept as it is (WantsExchange: for oneDNN, it arrives in the
//   layout Backward reads);
// - the blob alone holds its buffer: no Split's top shares it, it is no view of another
//   buffer (the parameter arena, shared activations), and it holds exactly count() values;
// - the kept buffer has the same size.
// Otherwise the layer copies the input into kept() during Forward. Each exchange adds one to
// the blob's data_generation() and to exchanges(): whoever holds the blob's old buffer can
// tell that the blob's values are no longer there.
template <typename Dtype>
class InputExchange {
 public:
  virtual ~InputExchange() = default;

  // The net's: exchanges the blob's buffer for kept() where the rules above allow, and
  // records whether it did for this Forward.
  void Exchange(Blob<Dtype>* blob);

  // Where the input is kept; null until the layer sizes it.
  const std::shared_ptr<SyncedMemory>& kept() const { return kept_; }
  // How many Forwards received their input by exchange.
  std::uint64_t exchanges() const { return exchanges_; }

 protected:
  // Whether this Forward's input, as `data` holds it, should be kept by exchange.
  virtual bool WantsExchange(const SyncedMemory& data) const = 0;
  // Gives kept() `bytes` (a new buffer where its size differs).
  void SizeKept(std::size_t bytes);
  // Whether kept() holds this Forward's input by exchange. Asked once per Forward, it resets,
  // so that a Forward the net did not precede with an exchange (a layer run on its own)
  // copies the input.
  bool TakeExchanged() {
    const bool exchanged = exchanged_;
    exchanged_ = false;
    return exchanged;
  }

 private:
  std::shared_ptr<SyncedMemory> kept_;
  bool exchanged_ = false;
  std::uint64_t exchanges_ = 0;
};

}  // namespace doppio
