#include "doppio/util/rng.hpp"

namespace doppio {

double Rng::Uniform(double a, double b) {
  std::uniform_real_distribution<double> dist(a, b);
  return dist(engine_);
}

double Rng::Gaussian(double mean, double stddev) {
  std::normal_distribution<double> dist(mean, stddev);
  return dist(engine_);
}

bool Rng::Bernoulli(double p) {
  std::bernoulli_distribution dist(p);
  return dist(engine_);
}

std::uint64_t Rng::Below(std::uint64_t n) {
  std::uniform_int_distribution<std::uint64_t> dist(0, n - 1);
  return dist(engine_);
}

std::uint64_t DeriveSeed(std::uint64_t seed, std::uint64_t stream) {
  // splitmix64 finaliser over the pair: cheap, and nearby inputs give unrelated outputs.
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (stream + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace doppio
