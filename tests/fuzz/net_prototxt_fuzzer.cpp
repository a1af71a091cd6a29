// A text prototxt, as `doppio train/test/time` reads it: parsed and checked into a
// NetParameter, then built into a Net<float> for TRAIN and for TEST (layer filtering, split
// insertion, every layer's SetUp and Reshape, weight fillers).
#include <cstddef>
#include <cstdint>
#include <string>

#include "doppio/core/net.hpp"
#include "doppio/util/io.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  doppio::fuzz::QuietLogging();
  const std::string text(reinterpret_cast<const char*>(data), size);
  doppio::fuzz::ExpectingErrors([&] {
    doppio::NetParameter param = doppio::ReadNetParamsFromTextString(text, "fuzz.prototxt");
    for (doppio::Phase phase : {doppio::TRAIN, doppio::TEST}) {
      param.mutable_state()->set_phase(phase);
      doppio::fuzz::ExpectingErrors([&] { doppio::Net<float> net(param); });
    }
  });
  return 0;
}
