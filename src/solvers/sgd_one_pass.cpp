#include "doppio/solvers/sgd_one_pass.hpp"

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace doppio {

template <typename Dtype>
bool cpu_sgd_one_pass(const std::vector<SgdSegment<Dtype>>& segments, Dtype grad_scale,
                      Dtype momentum, bool l1, Dtype* weights, Dtype* diff, Dtype* history) {
  // As cpu_axpy_finite: the exponent bits all ones, tested with an integer OR.
  using Bits = std::conditional_t<sizeof(Dtype) == 4, std::uint32_t, std::uint64_t>;
  constexpr Bits kExponent = sizeof(Dtype) == 4 ? Bits(0x7f800000u) : Bits(0x7ff0000000000000ull);
  Bits non_finite = 0;
  std::size_t begin = 0;
  for (const SgdSegment<Dtype>& s : segments) {
    for (std::size_t i = begin; i < s.end; ++i) {
      const Dtype value =
          SgdOnePassStep(s, grad_scale, momentum, l1, weights + i, diff + i, history + i);
      Bits bits;
      std::memcpy(&bits, &value, sizeof(bits));
      non_finite |= (bits & kExponent) == kExponent;
    }
    begin = s.end;
  }
  return non_finite == 0;
}

template bool cpu_sgd_one_pass(const std::vector<SgdSegment<float>>&, float, float, bool, float*,
                               float*, float*);
template bool cpu_sgd_one_pass(const std::vector<SgdSegment<double>>&, double, double, bool,
                               double*, double*, double*);

}  // namespace doppio
