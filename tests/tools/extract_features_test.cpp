// `doppio extract_features` end to end: the records it writes hold, image by image, the
// blobs a hand computation gives.
#include <gtest/gtest.h>

#include <filesystem>

#include "cli_test_util.hpp"
#include "doppio/data/db.hpp"
#include "doppio/util/io.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

using namespace cli_test;

// Every image is x = [1, 1, 1]; y = W x + b with the weights written below.
const char* kNet = R"(
name: "features"
layer { name: "data" type: "DummyData" top: "x"
        dummy_data_param { shape { dim: 3 dim: 3 } data_filler { type: "constant" value: 1 } } }
layer { name: "ip" type: "InnerProduct" bottom: "x" top: "y"
        inner_product_param { num_output: 2 } }
layer { name: "relu" type: "ReLU" bottom: "y" top: "r" }
)";

const char* kWeights = R"(
name: "features"
layer { name: "ip" type: "InnerProduct"
        blobs { shape { dim: 2 dim: 3 } data: 1 data: 2 data: 3 data: -4 data: -5 data: -6 }
        blobs { shape { dim: 2 } data: 0.5 data: 1 } }
)";

class ExtractFeaturesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteText(Path("net.prototxt"), kNet);
    WriteProtoToBinaryFile(ParseText<NetParameter>(kWeights), Path("w.caffemodel"));
  }
  std::string Path(const std::string& name) const { return dir_.path() + "/" + name; }
  Result Extract(const std::vector<std::string>& flags) {
    std::vector<std::string> args = {"extract_features", "--model=" + Path("net.prototxt"),
                                     "--weights=" + Path("w.caffemodel")};
    args.insert(args.end(), flags.begin(), flags.end());
    return RunDoppio(args, Path("log.txt"));
  }
  TempDir dir_;
};

// The records of an LMDB in key order: (key, datum).
std::vector<std::pair<std::string, Datum>> ReadRecords(const std::string& path) {
  std::vector<std::pair<std::string, Datum>> records;
  auto db = db::OpenLMDB(path, db::Mode::kRead);
  auto cursor = db->NewCursor();
  for (cursor->SeekToFirst(); cursor->valid(); cursor->Next()) {
    Datum datum;
    EXPECT_TRUE(datum.ParseFromArray(cursor->value().data(), cursor->value().size()));
    records.emplace_back(std::string(cursor->key()), datum);
  }
  return records;
}

TEST_F(ExtractFeaturesTest, WritesOneDatumPerImageForEachBlob) {
  const Result run =
      Extract({"--blobs=y,r", "--outputs=" + Path("y_db") + "," + Path("r_db"), "--iterations=2"});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_CONTAINS(run.output, "Extracted features of 6 query images for feature blob y");
  const auto y = ReadRecords(Path("y_db"));
  const auto r = ReadRecords(Path("r_db"));
  ASSERT_EQ(y.size(), 6u);
  ASSERT_EQ(r.size(), 6u);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(y[i].first, "000000000" + std::to_string(i));
    EXPECT_EQ(y[i].second.channels(), 2);
    EXPECT_EQ(y[i].second.height(), 1);
    EXPECT_EQ(y[i].second.width(), 1);
    ASSERT_EQ(y[i].second.float_data_size(), 2);
    // 1 + 2 + 3 + 0.5 and -4 - 5 - 6 + 1; the ReLU keeps the first and zeroes the second.
    EXPECT_EQ(y[i].second.float_data(0), 6.5f);
    EXPECT_EQ(y[i].second.float_data(1), -14.f);
    EXPECT_EQ(r[i].second.float_data(0), 6.5f);
    EXPECT_EQ(r[i].second.float_data(1), 0.f);
  }
}

TEST_F(ExtractFeaturesTest, BadFlagsAreErrorsNamingThem) {
  const Result unknown = Extract({"--blobs=fc7", "--outputs=" + Path("db")});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_CONTAINS(unknown.output, "net 'features' has no blob 'fc7' (--blobs)");
  const Result uneven = Extract({"--blobs=y,r", "--outputs=" + Path("db")});
  EXPECT_EQ(uneven.exit_code, 1);
  EXPECT_CONTAINS(uneven.output, "--blobs names 2 blob(s) but --outputs 1 database(s)");
  std::filesystem::create_directory(Path("taken"));
  const Result exists = Extract({"--blobs=y", "--outputs=" + Path("taken")});
  EXPECT_EQ(exists.exit_code, 1);
  EXPECT_CONTAINS(exists.output, Path("taken"));
  const Result leveldb = Extract({"--blobs=y", "--outputs=" + Path("db"), "--backend=leveldb"});
  EXPECT_EQ(leveldb.exit_code, 1);
  EXPECT_CONTAINS(leveldb.output, "LevelDB");
}

}  // namespace
}  // namespace doppio
