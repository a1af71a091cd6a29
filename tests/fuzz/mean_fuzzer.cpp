// A mean .binaryproto (what compute_image_mean writes and transform_param.mean_file names),
// loaded by DataTransformer and subtracted from records of two shapes, 3x4x4 raw pixels and
// 1x5x6 float_data, with and without a crop.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "doppio/data/data_transformer.hpp"
#include "fuzz_util.hpp"

namespace {

std::vector<doppio::Datum> Records() {
  doppio::Datum pixels;
  pixels.set_channels(3);
  pixels.set_height(4);
  pixels.set_width(4);
  pixels.set_data(std::string(3 * 4 * 4, '\x40'));
  doppio::Datum floats;
  floats.set_channels(1);
  floats.set_height(5);
  floats.set_width(6);
  for (int i = 0; i < 5 * 6; ++i) floats.add_float_data(0.5f * i);
  return {pixels, floats};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::vector<doppio::Datum> records = [] {
    doppio::fuzz::QuietLogging();
    return Records();
  }();
  const std::string path = doppio::fuzz::WriteScratch("fuzz.binaryproto", data, size);
  for (int crop : {0, 3}) {
    for (doppio::Phase phase : {doppio::TRAIN, doppio::TEST}) {
      doppio::fuzz::ExpectingErrors([&] {
        doppio::TransformationParameter param;
        param.set_mean_file(path);
        param.set_crop_size(crop);
        param.set_mirror(true);
        doppio::DataTransformer<float> transformer(param, phase, "fuzz transformer");
        transformer.set_seed(size);
        for (const doppio::Datum& record : records) {
          doppio::fuzz::ExpectingErrors([&] {
            const std::vector<int> shape = transformer.InferShape(record, "fuzz record");
            std::vector<float> out(static_cast<std::size_t>(shape[0]) * shape[1] * shape[2]);
            transformer.Transform(record, transformer.DrawFor(size), out.data(), "fuzz record",
                                  &shape);
          });
        }
      });
    }
  }
  return 0;
}
