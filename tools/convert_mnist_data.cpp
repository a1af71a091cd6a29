// convert_mnist_data: MNIST idx files -> LMDB of Datum records (Caffe's layout and keys).
#include <cstdio>

#include "doppio/data/convert.hpp"
#include "tool_main.hpp"

DEFINE_string(backend, "lmdb", "The output database backend (lmdb; leveldb is not supported)");

int main(int argc, char** argv) {
  return doppio::RunTool(
      argc, argv,
      "Converts the MNIST data set (idx files) to an LMDB of Datum records.\n"
      "Usage:\n"
      "    convert_mnist_data [--backend=lmdb] input_image_file input_label_file output_db",
      3, [](int argc, char** argv) {
        const doppio::ConvertSummary summary =
            doppio::ConvertMnist(argv[1], argv[2], argv[3], FLAGS_backend);
        std::printf("convert_mnist_data: wrote %zu records to %s in %.2f s\n", summary.records,
                    argv[3], summary.seconds);
        return 0;
      });
}
