// convert_cifar_data: CIFAR-10 binary batches -> train and test LMDBs of Datum records.
#include <cstdio>
#include <filesystem>

#include "doppio/data/convert.hpp"
#include "tool_main.hpp"

DEFINE_string(backend, "lmdb", "The output database backend (lmdb; leveldb is not supported)");

int main(int argc, char** argv) {
  return doppio::RunTool(
      argc, argv,
      "Converts CIFAR-10 (binary version: data_batch_1..5.bin, test_batch.bin) to LMDBs\n"
      "<output_folder>/cifar10_train_lmdb and <output_folder>/cifar10_test_lmdb.\n"
      "Usage:\n"
      "    convert_cifar_data [--backend=lmdb] input_folder output_folder",
      2, [](int argc, char** argv) {
        const auto summaries = doppio::ConvertCifar10(argv[1], argv[2], FLAGS_backend);
        const std::filesystem::path out(argv[2]);
        std::printf("convert_cifar_data: wrote %zu records to %s in %.2f s\n", summaries[0].records,
                    (out / "cifar10_train_lmdb").c_str(), summaries[0].seconds);
        std::printf("convert_cifar_data: wrote %zu records to %s in %.2f s\n", summaries[1].records,
                    (out / "cifar10_test_lmdb").c_str(), summaries[1].seconds);
        return 0;
      });
}
