#pragma once

#include <cstdint>

#include "doppio/util/host_device.hpp"

namespace doppio {

// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"): a keyed
// bijection of a 128-bit counter. A draw needs no generator state, only its counter and
// key, so the host and a kernel draw the same numbers for the same (counter, key), in any
// order and on any number of threads.
struct PhiloxWords {
  std::uint32_t v[4];
};

DOPPIO_HOST_DEVICE inline PhiloxWords Philox4x32(std::uint32_t c0, std::uint32_t c1,
                                                 std::uint32_t c2, std::uint32_t c3,
                                                 std::uint64_t key) {
  std::uint32_t k0 = static_cast<std::uint32_t>(key);
  std::uint32_t k1 = static_cast<std::uint32_t>(key >> 32);
  constexpr std::uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr std::uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = static_cast<std::uint64_t>(kM0) * c0;
    const std::uint64_t p1 = static_cast<std::uint64_t>(kM1) * c2;
    const std::uint32_t n0 = static_cast<std::uint32_t>(p1 >> 32) ^ c1 ^ k0;
    const std::uint32_t n2 = static_cast<std::uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c1 = static_cast<std::uint32_t>(p1);
    c3 = static_cast<std::uint32_t>(p0);
    c0 = n0;
    c2 = n2;
    k0 += kW0;
    k1 += kW1;
  }
  return {{c0, c1, c2, c3}};
}

// The random words of one training sample: `position` is the sample's place in the global
// stream of training samples (ShardSequence), `block` numbers the groups of four words one
// sample needs (unit u of a Dropout mask takes word u % 4 of block u / 4). Keyed by a
// per-layer seed, so each layer draws its own numbers.
DOPPIO_HOST_DEVICE inline PhiloxWords SampleWords(std::uint64_t seed, std::uint64_t position,
                                                  std::uint64_t block) {
  return Philox4x32(static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32),
                    static_cast<std::uint32_t>(position),
                    static_cast<std::uint32_t>(position >> 32), seed);
}

// Word `index` of a sample's words: word index % 4 of block index / 4.
DOPPIO_HOST_DEVICE inline std::uint32_t SampleWord(std::uint64_t seed, std::uint64_t position,
                                                   std::uint64_t index) {
  return SampleWords(seed, position, index / 4).v[index % 4];
}

// Bernoulli(p) from 32 random bits, decided in integers so that every device agrees: true
// when word < BernoulliThreshold(p).
inline std::uint64_t BernoulliThreshold(double p) {
  if (p <= 0) return 0;
  if (p >= 1) return std::uint64_t(1) << 32;
  const double scaled = p * 4294967296.0;
  const auto floor = static_cast<std::uint64_t>(scaled);
  return floor + (static_cast<double>(floor) < scaled ? 1 : 0);
}

// Uniform in [0, 1) from a 32-bit word, with 24 bits: the same value in float and double.
DOPPIO_HOST_DEVICE inline double UniformFromWord(std::uint32_t word) {
  return static_cast<double>(word >> 8) * (1.0 / 16777216.0);
}

}  // namespace doppio
