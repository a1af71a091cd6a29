#pragma once

#include <cstdint>
#include <random>

namespace doppio {

// A seeded random source. Each layer, filler and transformer owns or borrows one, so runs
// are reproducible without any process-wide generator.
class Rng {
 public:
  explicit Rng(std::uint64_t seed = 1701) : engine_(seed), seed_(seed) {}
  void Seed(std::uint64_t seed) {
    engine_.seed(seed);
    seed_ = seed;
  }
  // The last seed given: counter-based draws (philox.hpp) key on it.
  std::uint64_t seed() const { return seed_; }
  std::mt19937_64& engine() { return engine_; }

  // Uniform in [a, b].
  double Uniform(double a, double b);
  double Gaussian(double mean, double stddev);
  bool Bernoulli(double p);
  // Uniform integer in [0, n).
  std::uint64_t Below(std::uint64_t n);

 private:
  std::mt19937_64 engine_;
  std::uint64_t seed_;
};

// Derives an independent seed for a sub-stream (e.g. layer k of a net seeded with s).
std::uint64_t DeriveSeed(std::uint64_t seed, std::uint64_t stream);

}  // namespace doppio
