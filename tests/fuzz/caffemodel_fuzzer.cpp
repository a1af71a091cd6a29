// A binary .caffemodel, as `doppio train --weights` and `doppio test` read it, into the
// LeNet of models/lenet/deploy.prototxt: LoadNetWeights (copy by name, with its checks), and
// the exact-structure check that restoring a snapshot makes.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "doppio/core/net.hpp"
#include "doppio/solvers/weights.hpp"
#include "doppio/util/io.hpp"
#include "fuzz_util.hpp"

namespace {
doppio::Net<float>& LeNet() {
  static const std::unique_ptr<doppio::Net<float>> net = [] {
    doppio::fuzz::QuietLogging();
    doppio::NetParameter param =
        doppio::ReadNetParamsFromTextFile(DOPPIO_SOURCE_DIR "/models/lenet/deploy.prototxt");
    param.mutable_state()->set_phase(doppio::TEST);
    return std::make_unique<doppio::Net<float>>(param);
  }();
  return *net;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  doppio::Net<float>& net = LeNet();
  const std::string path = doppio::fuzz::WriteScratch("fuzz.caffemodel", data, size);
  doppio::fuzz::ExpectingErrors([&] { doppio::LoadNetWeights(&net, path); });
  doppio::fuzz::ExpectingErrors([&] {
    doppio::NetParameter weights;
    doppio::ReadProtoFromBinaryFile(path, &weights);
    doppio::CheckWeightsMatchNet(net, weights, path);
  });
  return 0;
}
