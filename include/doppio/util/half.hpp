#pragma once

#include <cstdint>
#include <cstring>

#include "doppio/util/host_device.hpp"

namespace doppio {

// IEEE 754 binary16 and bfloat16 as bit patterns, converted from and to float with
// round-to-nearest-even (what a GPU's conversion instructions do). The same functions run in
// device code (a .cu file compiled by nvcc sees them as __host__ __device__), so that the
// device's packing of gradients for the wire is the host's, bit for bit.

DOPPIO_HOST_DEVICE inline std::uint32_t FloatBits(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

DOPPIO_HOST_DEVICE inline float BitsFloat(std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// Values beyond binary16's range (65504) become infinities, as a cast does.
DOPPIO_HOST_DEVICE inline std::uint16_t FloatToHalf(float value) {
  const std::uint32_t bits = FloatBits(value);
  const std::uint32_t sign = (bits >> 16) & 0x8000u;
  const std::uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) {  // infinity, or NaN (kept quiet)
    return static_cast<std::uint16_t>(sign | 0x7c00u | (magnitude > 0x7f800000u ? 0x200u : 0));
  }
  if (magnitude >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // overflow
  if (magnitude < 0x38800000u) {
    // A subnormal half (or zero): shift the mantissa with its implicit bit into place.
    if (magnitude < 0x33000000u) return static_cast<std::uint16_t>(sign);
    const std::uint32_t exponent = magnitude >> 23;
    const std::uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126 - exponent;  // 14 to 24
    std::uint32_t half = mantissa >> shift;
    const std::uint32_t rest = mantissa & ((1u << shift) - 1);
    const std::uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
    return static_cast<std::uint16_t>(sign | half);
  }
  // A normal half: rebias the exponent (127 -> 15) and round the 13 dropped bits.
  std::uint32_t half = (magnitude - 0x38000000u) >> 13;
  const std::uint32_t rest = magnitude & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
  return static_cast<std::uint16_t>(sign | half);
}

DOPPIO_HOST_DEVICE inline float HalfToFloat(std::uint16_t half) {
  const std::uint32_t sign = static_cast<std::uint32_t>(half & 0x8000u) << 16;
  const std::uint32_t exponent = (half >> 10) & 0x1fu;
  const std::uint32_t mantissa = half & 0x3ffu;
  if (exponent == 0x1f) return BitsFloat(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) return BitsFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
  // Zero or subnormal: mantissa x 2^-24, exact in float.
  const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
  return sign ? -magnitude : magnitude;
}

DOPPIO_HOST_DEVICE inline std::uint16_t FloatToBfloat16(float value) {
  const std::uint32_t bits = FloatBits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<std::uint16_t>((bits >> 16) | 0x40u);  // NaN stays NaN
  }
  return static_cast<std::uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

DOPPIO_HOST_DEVICE inline float Bfloat16ToFloat(std::uint16_t value) {
  return BitsFloat(static_cast<std::uint32_t>(value) << 16);
}

}  // namespace doppio
