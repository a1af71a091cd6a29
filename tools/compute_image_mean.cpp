// compute_image_mean: the mean image of an LMDB of Datum records, as a binaryproto.
#include <cstdio>
#include <vector>

#include "doppio/data/convert.hpp"
#include "tool_main.hpp"

DEFINE_string(backend, "lmdb", "The input database backend (lmdb; leveldb is not supported)");

int main(int argc, char** argv) {
  return doppio::RunTool(
      argc, argv,
      "Computes the mean image of a set of Datum records.\n"
      "Usage:\n"
      "    compute_image_mean [--backend=lmdb] INPUT_DB [OUTPUT_FILE]\n"
      "OUTPUT_FILE (a BlobProto binaryproto) is written atomically; without it only the "
      "per-channel means are printed.",
      1, [](int argc, char** argv) {
        std::vector<double> channel_means;
        const std::string output = argc > 2 ? argv[2] : "";
        const doppio::ConvertSummary summary =
            doppio::ComputeImageMean(argv[1], output, &channel_means, FLAGS_backend);
        for (std::size_t c = 0; c < channel_means.size(); ++c) {
          std::printf("mean_value channel [%zu]: %g\n", c, channel_means[c]);
        }
        std::printf("compute_image_mean: read %zu records from %s in %.2f s%s%s\n", summary.records,
                    argv[1], summary.seconds, output.empty() ? "" : ", wrote ", output.c_str());
        return 0;
      });
}
