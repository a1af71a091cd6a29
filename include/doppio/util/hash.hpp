#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace doppio {

// A 64-bit hash of bytes, for the ranks' start-up agreement and the weight checksums (not
// cryptographic): eight bytes at a time, each word mixed with a multiply-xorshift.
class Hasher {
 public:
  explicit Hasher(std::uint64_t seed = 0x9e3779b97f4a7c15ULL) : state_(seed) {}

  Hasher& AddBytes(const void* data, std::size_t size) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    std::size_t i = 0;
    for (; i + 8 <= size; i += 8) {
      std::uint64_t word;
      std::memcpy(&word, bytes + i, 8);
      Mix(word);
    }
    std::uint64_t tail = 0;
    std::memcpy(&tail, bytes + i, size - i);
    Mix(tail ^ (static_cast<std::uint64_t>(size) << 56));
    return *this;
  }
  template <typename T>
  Hasher& Add(const T& value) {
    return AddBytes(&value, sizeof(T));
  }
  Hasher& Add(const std::string& text) { return AddBytes(text.data(), text.size()); }
  std::uint64_t value() const {
    std::uint64_t x = state_;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
  }

 private:
  void Mix(std::uint64_t word) {
    word *= 0x87c37b91114253d5ULL;
    word = (word << 31) | (word >> 33);
    word *= 0x4cf5ad432745937fULL;
    state_ ^= word;
    state_ = ((state_ << 27) | (state_ >> 37)) * 5 + 0x52dce729;
  }
  std::uint64_t state_;
};

}  // namespace doppio
