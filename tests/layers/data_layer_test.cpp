// The Data layer reading generated LMDBs, directly and through a Net.
#include "doppio/layers/data_layer.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <set>
#include <thread>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "../data/data_test_helpers.hpp"
#include "../data/jpeg_test_images.hpp"
#include "doppio/core/net.hpp"
#include "doppio/data/image_io.hpp"
#include "doppio/util/io.hpp"
#include "doppio/util/thread_pool.hpp"
#include "log_capture.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

using testing_data::IndexedDatums;
using testing_data::MakeDatum;
using testing_data::WriteDatumLmdb;
using testing_data::WriteLmdb;

// A one-layer net reading `source`: data and label tops.
std::string DataNet(const std::string& source, const std::string& data_param,
                    const std::string& transform_param = "", const std::string& phase = "TEST") {
  return "name: 'n' state { phase: " + phase +
         " } layer { name: 'data' type: 'Data' top: 'data' top: 'label' transform_param { " +
         transform_param + " } data_param { source: '" + source + "' backend: LMDB " + data_param +
         " } }";
}

template <typename Dtype>
std::unique_ptr<Net<Dtype>> MakeNet(const std::string& text, std::uint64_t seed = 1701) {
  return std::make_unique<Net<Dtype>>(ReadNetParamsFromTextString(text, "test"), seed);
}

struct Step {
  std::vector<double> data;
  std::vector<double> label;
  std::vector<int> shape;
};

template <typename Dtype>
Step Forward(Net<Dtype>* net) {
  net->Forward();
  const auto data = net->blob_by_name("data");
  const auto label = net->blob_by_name("label");
  return {std::vector<double>(data->cpu_data(), data->cpu_data() + data->count()),
          std::vector<double>(label->cpu_data(), label->cpu_data() + label->count()),
          data->shape()};
}

template <typename Dtype>
class DataLayerTest : public ::testing::Test {
 protected:
  TempDir dir_;
  std::string Source(int n, const std::string& name = "db") {
    const std::string path = dir_.path() + "/" + name;
    WriteDatumLmdb(path, IndexedDatums(n));
    return path;
  }
};
TYPED_TEST_SUITE(DataLayerTest, TestDtypes);

TYPED_TEST(DataLayerTest, BatchesHoldRecordsAndLabelsInOrderAndWrapAround) {
  // 10 records of 1 x 2 x 3, record i has label i and pixels i + p; batch 4, scale 0.5.
  auto net = MakeNet<TypeParam>(DataNet(this->Source(10), "batch_size: 4", "scale: 0.5"));
  const std::vector<std::vector<int>> expected = {
      {0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 0, 1}, {2, 3, 4, 5}, {6, 7, 8, 9}};
  for (const auto& records : expected) {
    const Step step = Forward(net.get());
    EXPECT_EQ(step.shape, (std::vector<int>{4, 1, 2, 3}));
    ASSERT_EQ(step.label.size(), 4u);
    for (int b = 0; b < 4; ++b) {
      EXPECT_EQ(step.label[b], records[b]);
      for (int p = 0; p < 6; ++p) EXPECT_EQ(step.data[b * 6 + p], 0.5 * (records[b] + p));
    }
  }
}

TYPED_TEST(DataLayerTest, LayerDirectlyWithDataOnlyTop) {
  LayerParameter param =
      ParseText<LayerParameter>("name: 'd' type: 'Data' phase: TEST data_param { source: '" +
                                this->Source(3) + "' batch_size: 2 backend: LMDB }");
  DataLayer<TypeParam> layer(param);
  Blob<TypeParam> data;
  std::vector<Blob<TypeParam>*> top = {&data};
  layer.SetUp({}, top);
  EXPECT_EQ(data.shape(), (std::vector<int>{2, 1, 2, 3}));
  EXPECT_FALSE(layer.AllowForceBackward(0));
  layer.Forward({}, top);
  layer.Forward({}, top);
  // Second batch: records 2 and 0.
  EXPECT_EQ(data.cpu_data()[0], 2);
  EXPECT_EQ(data.cpu_data()[6], 0);
}

TYPED_TEST(DataLayerTest, UnionOfShardsIsTheSingleProcessBatch) {
  // 17 records is no multiple of any size * 3 here, so the batches wrap mid-batch.
  const std::string source = this->Source(17);
  const std::string transform = "crop_size: 1 mean_value: 2";
  for (int size = 1; size <= 4; ++size) {
    SCOPED_TRACE("size " + std::to_string(size));
    auto single =
        MakeNet<TypeParam>(DataNet(source, "batch_size: " + std::to_string(3 * size), transform));
    std::vector<std::unique_ptr<Net<TypeParam>>> ranks;
    for (int r = 0; r < size; ++r) {
      ranks.push_back(MakeNet<TypeParam>(DataNet(
          source,
          "batch_size: 3 shard_rank: " + std::to_string(r) + " shard_size: " + std::to_string(size),
          transform)));
    }
    for (int k = 0; k < 14; ++k) {
      const Step whole = Forward(single.get());
      Step together;
      for (auto& rank : ranks) {
        const Step part = Forward(rank.get());
        EXPECT_EQ(part.shape[0], 3);
        together.data.insert(together.data.end(), part.data.begin(), part.data.end());
        together.label.insert(together.label.end(), part.label.begin(), part.label.end());
      }
      EXPECT_EQ(together.label, whole.label) << "batch " << k;
      EXPECT_EQ(together.data, whole.data) << "batch " << k;
    }
  }
}

// JPEG records of differing sizes, record i labelled i; `broken` are cut short.
std::vector<std::string> JpegRecords(int n, const std::set<int>& broken = {}) {
  std::vector<std::string> values;
  for (int i = 0; i < n; ++i) {
    std::string bytes = testing_jpeg::EncodeJpeg(
        testing_jpeg::PhotoLike(24 + 5 * (i % 4), 40 - 3 * (i % 5), 3, static_cast<unsigned>(i)));
    if (broken.count(i) > 0) bytes.resize(bytes.size() / 2);
    Datum datum;
    datum.set_encoded(true);
    datum.set_label(i);
    datum.set_data(bytes);
    values.push_back(datum.SerializeAsString());
  }
  return values;
}

// Random-resized crops and mirrors of JPEG records in TRAIN are drawn per record position:
// the ranks' batches together are one process's, on 1 to 3 ranks.
TYPED_TEST(DataLayerTest, UnionOfShardsIsTheSingleProcessBatchWithResizedCrops) {
  const std::string source = this->dir_.path() + "/jpeg";
  WriteLmdb(source, JpegRecords(11));
  const std::string transform = "resized_crop_size: 8 mirror: true mean_value: 100";
  for (int size = 1; size <= 3; ++size) {
    SCOPED_TRACE("size " + std::to_string(size));
    auto single = MakeNet<TypeParam>(DataNet(
        source, "batch_size: " + std::to_string(2 * size) + " threads: 2", transform, "TRAIN"));
    std::vector<std::unique_ptr<Net<TypeParam>>> ranks;
    for (int r = 0; r < size; ++r) {
      ranks.push_back(MakeNet<TypeParam>(DataNet(
          source,
          "batch_size: 2 shard_rank: " + std::to_string(r) + " shard_size: " + std::to_string(size),
          transform, "TRAIN")));
    }
    std::set<std::vector<double>> distinct;
    for (int k = 0; k < 8; ++k) {
      const Step whole = Forward(single.get());
      EXPECT_EQ(whole.shape, (std::vector<int>{2 * size, 3, 8, 8}));
      Step together;
      for (auto& rank : ranks) {
        const Step part = Forward(rank.get());
        together.data.insert(together.data.end(), part.data.begin(), part.data.end());
        together.label.insert(together.label.end(), part.label.begin(), part.label.end());
      }
      EXPECT_EQ(together.label, whole.label) << "batch " << k;
      EXPECT_EQ(together.data, whole.data) << "batch " << k;
      distinct.insert(whole.data);
    }
    // Epochs differ: the draws are per position, not per record.
    EXPECT_EQ(distinct.size(), 8u);
  }
}

// A record that does not decode: an error naming the layer, the LMDB, the key and libjpeg's
// reason; with skip_corrupt, a warning that counts, and the batch keeps its records' draws.
TYPED_TEST(DataLayerTest, CorruptRecordsAreAnErrorOrSkippedWithSkipCorrupt) {
  const std::string source = this->dir_.path() + "/broken";
  WriteLmdb(source, JpegRecords(6, {2, 5}));
  const std::string transform = "resized_crop_size: 8 mirror: true";
  auto strict = MakeNet<TypeParam>(DataNet(source, "batch_size: 3", transform, "TRAIN"));
  EXPECT_ERROR_WITH(Forward(strict.get()), "layer 'data' (Data)", "record '00000002'",
                    "LMDB '" + source + "'", "does not decode", "Premature end of JPEG file");

  const std::string good = this->dir_.path() + "/good";
  WriteLmdb(good, JpegRecords(6));
  // Before the net: its prefetch thread decodes batches ahead.
  LogCapture warnings(google::GLOG_WARNING);
  auto skipping =
      MakeNet<TypeParam>(DataNet(source, "batch_size: 3 skip_corrupt: true", transform, "TRAIN"));
  auto reference = MakeNet<TypeParam>(DataNet(good, "batch_size: 3", transform, "TRAIN"));
  for (int k = 0; k < 2; ++k) {
    const Step got = Forward(skipping.get());
    const Step want = Forward(reference.get());
    // Record 2 (5) is replaced by record 1 (4), labels and all; the others are untouched.
    EXPECT_EQ(got.label, (std::vector<double>{3.0 * k, 3.0 * k + 1, 3.0 * k + 1}));
    const std::size_t per_record = got.data.size() / 3;
    EXPECT_TRUE(std::equal(got.data.begin(), got.data.begin() + 2 * per_record, want.data.begin()));
    EXPECT_NE(std::vector<double>(got.data.begin() + per_record, got.data.begin() + 2 * per_record),
              std::vector<double>(got.data.begin() + 2 * per_record, got.data.end()))
        << "the replacement keeps the skipped record's own draw";
  }
  const std::string text = warnings.text();
  EXPECT_NE(text.find("record '00000002' of LMDB '" + source + "' does not decode"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("record '00000001' of LMDB '" + source + "' in its place; 1 record skipped"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("2 records skipped so far"), std::string::npos) << text;

  // A batch of nothing but corrupt records is an error, skip_corrupt or not.
  const std::string all_broken = this->dir_.path() + "/all_broken";
  WriteLmdb(all_broken, JpegRecords(4, {2, 3}));
  auto hopeless =
      MakeNet<TypeParam>(DataNet(all_broken, "batch_size: 2 skip_corrupt: true", transform));
  Forward(hopeless.get());
  EXPECT_ERROR_WITH(Forward(hopeless.get()), "layer 'data' (Data)", "no record of the batch",
                    "does not decode");
}

TYPED_TEST(DataLayerTest, ImageSmallerThanTheCropNamesTheKeyAndBothSizes) {
  const std::string source = this->dir_.path() + "/small";
  WriteLmdb(source, JpegRecords(3));
  // Record 0 is 24 x 40, record 1 29 x 37, record 2 34 x 34 (height x width).
  EXPECT_ERROR_WITH(MakeNet<TypeParam>(DataNet(source, "batch_size: 1", "crop_size: 25")),
                    "layer 'data' (Data)", "record '00000000'", "crop_size 25", "3x24x40");
  auto fits = MakeNet<TypeParam>(DataNet(source, "batch_size: 3", "crop_size: 24"));
  EXPECT_EQ(Forward(fits.get()).shape, (std::vector<int>{3, 3, 24, 24}));
}

TYPED_TEST(DataLayerTest, RandSkipIsTheSameOnEveryRank) {
  const std::string source = this->Source(20);
  auto single = MakeNet<TypeParam>(DataNet(source, "batch_size: 4 rand_skip: 15"), 99);
  auto r0 = MakeNet<TypeParam>(
      DataNet(source, "batch_size: 2 rand_skip: 15 shard_rank: 0 shard_size: 2"), 99);
  auto r1 = MakeNet<TypeParam>(
      DataNet(source, "batch_size: 2 rand_skip: 15 shard_rank: 1 shard_size: 2"), 99);
  for (int k = 0; k < 6; ++k) {
    const Step whole = Forward(single.get());
    Step a = Forward(r0.get()), b = Forward(r1.get());
    a.label.insert(a.label.end(), b.label.begin(), b.label.end());
    EXPECT_EQ(a.label, whole.label);
  }
}

// TRAIN with random crops and mirrors: the sequence depends on the seed only, not on the
// prefetch depth, the decoding threads or how fast the consumer is.
TYPED_TEST(DataLayerTest, PrefetchDepthThreadsAndSpeedDoNotChangeResults) {
  TempDir& dir = this->dir_;
  std::vector<Datum> datums;
  for (int i = 0; i < 13; ++i) {
    datums.push_back(
        MakeDatum(2, 5, 6, i, [i](int c, int h, int w) { return 7 * i + 31 * c + 6 * h + w; }));
  }
  WriteDatumLmdb(dir.path() + "/train", datums);
  const std::string transform = "crop_size: 3 mirror: true scale: 0.25";
  auto run = [&](const std::string& extra, int consumer_sleep_ms, std::uint64_t seed) {
    auto net = MakeNet<TypeParam>(
        DataNet(dir.path() + "/train", "batch_size: 5 " + extra, transform, "TRAIN"), seed);
    std::vector<Step> steps;
    for (int k = 0; k < 7; ++k) {
      steps.push_back(Forward(net.get()));
      if (consumer_sleep_ms > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(consumer_sleep_ms));
      }
    }
    return steps;
  };
  const auto reference = run("prefetch: 1", 0, 5);
  for (const auto& [extra, sleep] : {std::pair<std::string, int>{"prefetch: 4", 0},
                                     {"prefetch: 4", 5},
                                     {"prefetch: 2 threads: 3", 0},
                                     {"prefetch: 1 threads: 2", 3}}) {
    const auto other = run(extra, sleep, 5);
    for (std::size_t k = 0; k < reference.size(); ++k) {
      EXPECT_EQ(other[k].data, reference[k].data) << extra << " batch " << k;
      EXPECT_EQ(other[k].label, reference[k].label) << extra << " batch " << k;
    }
  }
  // Another seed gives other crops.
  const auto reseeded = run("prefetch: 1", 0, 6);
  bool differs = false;
  for (std::size_t k = 0; k < reference.size(); ++k)
    differs |= reseeded[k].data != reference[k].data;
  EXPECT_TRUE(differs);
  EXPECT_EQ(reseeded[0].label, reference[0].label);
}

// Without data_param.threads, the decoders are as many as the threads of the pool current
// when the net is built (doppio's thread budget: the cores shared among the node's ranks).
TYPED_TEST(DataLayerTest, DecoderThreadsDefaultToTheCurrentPoolsAndResultsStayTheSame) {
  const std::string source = this->Source(9);
  const std::string transform = "crop_size: 2 mirror: true";
  auto run = [&](const std::string& threads) {
    LogCapture log(google::INFO);
    auto net = MakeNet<TypeParam>(DataNet(source, "batch_size: 4 " + threads, transform, "TRAIN"));
    std::vector<Step> steps;
    for (int k = 0; k < 4; ++k) steps.push_back(Forward(net.get()));
    return std::pair{steps, log.text()};
  };
  const auto [one, one_log] = run("threads: 1");
  EXPECT_CONTAINS(one_log, "1 decoder thread");
  ThreadPool pool(3);
  ThreadPool::Scope scope(&pool);
  const auto [budget, budget_log] = run("");
  EXPECT_CONTAINS(budget_log, "3 decoder threads (the process's CPU threads)");
  const auto [explicit_two, two_log] = run("threads: 2");
  EXPECT_CONTAINS(two_log, "2 decoder threads");
  for (std::size_t k = 0; k < one.size(); ++k) {
    EXPECT_EQ(budget[k].data, one[k].data) << "batch " << k;
    EXPECT_EQ(explicit_two[k].data, one[k].data) << "batch " << k;
  }
}

// decode: GPU needs nvJPEG and a GPU: a CPU net is refused, at set-up in a build without
// nvJPEG, at its first Forward in one with it.
TYPED_TEST(DataLayerTest, DecodeOnTheGpuIsRefusedOnTheCpu) {
  const std::string source = this->Source(2);
  EXPECT_ERROR_WITH(
      [&] { MakeNet<TypeParam>(DataNet(source, "batch_size: 1 decode: GPU"))->Forward(); }(),
      "layer 'data' (Data)", "data_param.decode: GPU");
}

TYPED_TEST(DataLayerTest, ShardsCropDifferentlyButReproducibly) {
  const std::string source = this->Source(8);
  auto make = [&](int rank) {
    return MakeNet<TypeParam>(
        DataNet(source, "batch_size: 4 shard_rank: " + std::to_string(rank) + " shard_size: 2",
                "mirror: true", "TRAIN"),
        3);
  };
  auto a = make(0), b = make(0);
  for (int k = 0; k < 4; ++k) EXPECT_EQ(Forward(a.get()).data, Forward(b.get()).data);
}

TYPED_TEST(DataLayerTest, ShutdownMidEpochDoesNotHang) {
  const std::string source = this->Source(50);
  const auto start = std::chrono::steady_clock::now();
  for (int forwards : {0, 1, 3}) {
    auto net = MakeNet<TypeParam>(DataNet(source, "batch_size: 4 prefetch: 3 threads: 2"));
    for (int i = 0; i < forwards; ++i) Forward(net.get());
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
}

TYPED_TEST(DataLayerTest, EncodedRecordsDecodeToTheSamePixels) {
  std::vector<std::string> encoded;
  std::vector<Datum> raw;
  cv::RNG rng(3);
  for (int i = 0; i < 4; ++i) {
    cv::Mat image(4, 5, CV_8UC3);
    rng.fill(image, cv::RNG::UNIFORM, 0, 256);
    std::vector<unsigned char> png;
    cv::imencode(".png", image, png);
    Datum d;
    d.set_encoded(true);
    d.set_label(i);
    d.set_data(std::string(png.begin(), png.end()));
    encoded.push_back(d.SerializeAsString());
    Datum r;
    MatToDatum(image, &r);
    r.set_label(i);
    raw.push_back(r);
  }
  WriteLmdb(this->dir_.path() + "/enc", encoded);
  WriteDatumLmdb(this->dir_.path() + "/raw", raw);
  auto a = MakeNet<TypeParam>(DataNet(this->dir_.path() + "/enc", "batch_size: 3", "crop_size: 3"));
  auto b = MakeNet<TypeParam>(DataNet(this->dir_.path() + "/raw", "batch_size: 3", "crop_size: 3"));
  for (int k = 0; k < 3; ++k) {
    const Step x = Forward(a.get()), y = Forward(b.get());
    EXPECT_EQ(x.shape, (std::vector<int>{3, 3, 3, 3}));
    EXPECT_EQ(x.data, y.data);
    EXPECT_EQ(x.label, y.label);
  }
  // force_gray through the deprecated-free path: one channel.
  auto gray =
      MakeNet<TypeParam>(DataNet(this->dir_.path() + "/enc", "batch_size: 2", "force_gray: true"));
  EXPECT_EQ(Forward(gray.get()).shape, (std::vector<int>{2, 1, 4, 5}));
}

TYPED_TEST(DataLayerTest, DeprecatedDataParamTransformFields) {
  auto net = MakeNet<TypeParam>(DataNet(this->Source(2), "batch_size: 1 scale: 2"));
  EXPECT_EQ(Forward(net.get()).data[1], 2.0);
  EXPECT_ERROR_WITH(
      MakeNet<TypeParam>(DataNet(this->Source(2, "db2"), "batch_size: 1 scale: 2", "scale: 3")),
      "layer 'data' (Data)", "data_param.scale", "transform_param.scale");
}

// Bad input: each error names the layer and what is wrong, never a crash or a hang.
TYPED_TEST(DataLayerTest, MissingLmdbNamesPathAndLayer) {
  EXPECT_ERROR_WITH(MakeNet<TypeParam>(DataNet("/no/such/mnist_lmdb", "batch_size: 4")),
                    "layer 'data' (Data)", "/no/such/mnist_lmdb");
}

TYPED_TEST(DataLayerTest, LevelDbIsNotSupported) {
  const std::string text = "layer { name: 'data' type: 'Data' top: 'data' data_param { source: '" +
                           this->Source(2) + "' batch_size: 1 backend: LEVELDB } }";
  EXPECT_ERROR_WITH(MakeNet<TypeParam>(text), "layer 'data' (Data)", "LEVELDB", "not supported");
}

TYPED_TEST(DataLayerTest, LmdbOfOtherRecordsNamesTheRecord) {
  WriteLmdb(this->dir_.path() + "/text", {"hello, world", "not a datum"});
  EXPECT_ERROR_WITH(MakeNet<TypeParam>(DataNet(this->dir_.path() + "/text", "batch_size: 1")),
                    "layer 'data' (Data)", "record '00000000'", this->dir_.path() + "/text");
  // A corrupt record later in the set surfaces in Forward.
  std::vector<std::string> values;
  for (const Datum& d : IndexedDatums(4)) values.push_back(d.SerializeAsString());
  values[2] = std::string("\xff\xff\xff\xff", 4);
  WriteLmdb(this->dir_.path() + "/corrupt", values);
  auto net = MakeNet<TypeParam>(DataNet(this->dir_.path() + "/corrupt", "batch_size: 2"));
  Forward(net.get());
  EXPECT_ERROR_WITH(Forward(net.get()), "layer 'data' (Data)", "record '00000002'", "not a Datum");
  // The error stays.
  EXPECT_THROW(Forward(net.get()), Error);
}

TYPED_TEST(DataLayerTest, RecordSizeDisagreesWithShape) {
  std::vector<Datum> datums = IndexedDatums(4);
  datums[3].mutable_data()->resize(5);
  WriteDatumLmdb(this->dir_.path() + "/short", datums);
  auto net = MakeNet<TypeParam>(DataNet(this->dir_.path() + "/short", "batch_size: 2"));
  Forward(net.get());
  EXPECT_ERROR_WITH(Forward(net.get()), "layer 'data' (Data)", "record '00000003'", "holds 5",
                    "needs 6");
}

TYPED_TEST(DataLayerTest, RecordsOfDifferingShapesWithoutCrop) {
  std::vector<Datum> datums = IndexedDatums(3);
  datums.push_back(MakeDatum(1, 4, 4, 3, [](int, int, int) { return 1; }));
  WriteDatumLmdb(this->dir_.path() + "/mixed", datums);
  auto net = MakeNet<TypeParam>(DataNet(this->dir_.path() + "/mixed", "batch_size: 2"));
  Forward(net.get());
  EXPECT_ERROR_WITH(Forward(net.get()), "layer 'data' (Data)", "record '00000003'", "1x4x4",
                    "1x2x3", "crop_size");
  // With a crop that fits every record they are fine.
  auto cropped =
      MakeNet<TypeParam>(DataNet(this->dir_.path() + "/mixed", "batch_size: 2", "crop_size: 2"));
  Forward(cropped.get());
  EXPECT_EQ(Forward(cropped.get()).shape, (std::vector<int>{2, 1, 2, 2}));
}

TYPED_TEST(DataLayerTest, CropLargerThanTheImage) {
  EXPECT_ERROR_WITH(MakeNet<TypeParam>(DataNet(this->Source(2), "batch_size: 1", "crop_size: 3")),
                    "layer 'data' (Data)", "crop_size 3", "1x2x3");
}

TYPED_TEST(DataLayerTest, MeanFileOfTheWrongShape) {
  BlobProto mean;
  for (int d : {1, 1, 3, 3}) mean.mutable_shape()->add_dim(d);
  for (int i = 0; i < 9; ++i) mean.add_data(1);
  const std::string path = this->dir_.path() + "/mean.binaryproto";
  WriteProtoToBinaryFile(mean, path);
  EXPECT_ERROR_WITH(
      MakeNet<TypeParam>(DataNet(this->Source(2), "batch_size: 1", "mean_file: '" + path + "'")),
      "layer 'data' (Data)", path, "1x3x3", "1x2x3");
}

TYPED_TEST(DataLayerTest, BadParameters) {
  const std::string source = this->Source(2);
  EXPECT_ERROR_WITH(MakeNet<TypeParam>(DataNet(source, "batch_size: 0")), "layer 'data' (Data)",
                    "batch_size");
  EXPECT_ERROR_WITH(MakeNet<TypeParam>(DataNet(source, "")), "layer 'data' (Data)", "batch_size");
  EXPECT_ERROR_WITH(MakeNet<TypeParam>(DataNet(source, "batch_size: 1 prefetch: 0")),
                    "layer 'data' (Data)", "prefetch");
  EXPECT_ERROR_WITH(
      MakeNet<TypeParam>(DataNet(source, "batch_size: 1 shard_rank: 2 shard_size: 2")),
      "layer 'data' (Data)", "shard_rank 2");
  EXPECT_ERROR_WITH(MakeNet<TypeParam>(DataNet(source, "batch_size: 1 shard_size: 0")),
                    "layer 'data' (Data)", "shard_size");
  EXPECT_ERROR_WITH(MakeNet<TypeParam>(DataNet(source, "batch_size: 1 threads: 0")),
                    "layer 'data' (Data)", "threads");
  EXPECT_ERROR_WITH(MakeNet<TypeParam>(DataNet("", "batch_size: 1")), "layer 'data' (Data)",
                    "source");
  WriteLmdb(this->dir_.path() + "/empty", {});
  EXPECT_ERROR_WITH(MakeNet<TypeParam>(DataNet(this->dir_.path() + "/empty", "batch_size: 1")),
                    "layer 'data' (Data)", "holds no records");
  EXPECT_ERROR_WITH(
      MakeNet<TypeParam>("layer { name: 'data' type: 'Data' top: 'a' top: 'b' top: 'c' "
                         "data_param { source: '" +
                         source + "' batch_size: 1 backend: LMDB } }"),
      "'data'", "top");
}

}  // namespace
}  // namespace doppio
