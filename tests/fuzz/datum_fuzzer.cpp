// A Datum (the record of Caffe's data sets: raw uint8 pixels, float_data, or an encoded image
// that libjpeg-turbo or OpenCV decodes) through DataTransformer, as the data layers use it:
// InferShape, then Transform into a buffer of that shape, under several transform_params
// (crop, mirror, mean values, scale, force_color / force_gray, random-resized crops with and
// without DCT scaling, the OpenCV decoder, both phases).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "doppio/data/data_transformer.hpp"
#include "doppio/util/io.hpp"
#include "fuzz_util.hpp"

namespace {

constexpr const char* kTransforms[] = {
    "",
    "crop_size: 3 mirror: true scale: 0.5 mean_value: 100",
    "crop_size: 2 force_color: true mean_value: 1 mean_value: 2 mean_value: 3",
    "mirror: true force_gray: true scale: 0.00390625",
    "resized_crop_size: 5 mirror: true mean_value: 10",
    "resized_crop_size: 3 jpeg_dct_scaling: false force_color: true",
    "crop_size: 1 decoder: OPENCV",
};

std::vector<doppio::DataTransformer<float>>& Transformers() {
  static std::vector<doppio::DataTransformer<float>> transformers = [] {
    doppio::fuzz::QuietLogging();
    std::vector<doppio::DataTransformer<float>> made;
    for (const char* text : kTransforms) {
      doppio::TransformationParameter param;
      doppio::ReadProtoFromTextString(text, "fuzz transform_param", &param);
      for (doppio::Phase phase : {doppio::TRAIN, doppio::TEST})
        made.emplace_back(param, phase, "fuzz");
    }
    return made;
  }();
  return transformers;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  doppio::Datum datum;
  if (!datum.ParseFromArray(data, static_cast<int>(size))) return 0;
  for (doppio::DataTransformer<float>& transformer : Transformers()) {
    doppio::fuzz::ExpectingErrors([&] {
      // Seeded per input, so that a crop offset or a mirror that finds a bug repeats.
      transformer.set_seed(size);
      const std::vector<int> shape = transformer.InferShape(datum, "fuzz record");
      std::vector<float> out(static_cast<std::size_t>(shape[0]) * shape[1] * shape[2]);
      transformer.Transform(datum, transformer.DrawFor(size), out.data(), "fuzz record", &shape);
    });
  }
  return 0;
}
