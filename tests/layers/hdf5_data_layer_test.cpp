// The HDF5Data and HDF5Output layers over small files written here.
#include "doppio/layers/hdf5_data_layer.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "../data/data_test_helpers.hpp"
#include "doppio/core/net.hpp"
#include "doppio/util/hdf5.hpp"
#include "doppio/util/io.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

// Sample s: data is 2 x 3 with value 10 s + k (k = 0..5), label is s.
class Hdf5DataLayerTest : public ::testing::Test {
 protected:
  // Writes a file of samples [first, first + rows) with its data as double and its labels as
  // float, and returns its path.
  std::string WriteFile(const std::string& name, int first, int rows) {
    std::vector<double> data;
    std::vector<float> label;
    for (int s = first; s < first + rows; ++s) {
      for (int k = 0; k < 6; ++k) data.push_back(10 * s + k);
      label.push_back(static_cast<float>(s));
    }
    Hdf5Writer file;
    file.Write("data", {rows, 2, 3}, data.data());
    file.Write("label", {rows}, label.data());
    const std::string path = dir_.path() + "/" + name;
    WriteFileAtomically(file.Image(), path);
    return path;
  }
  // Files of 3, 0, 4 and 2 samples (9 in all), listed in that order.
  void WriteFiles() {
    WriteList({WriteFile("a.h5", 0, 3), WriteFile("empty.h5", 3, 0), WriteFile("b.h5", 3, 4),
               WriteFile("c.h5", 7, 2)});
  }
  void WriteList(const std::vector<std::string>& files) {
    std::ofstream list(List());
    for (const std::string& file : files) list << "  " << file << "\n\n";
  }
  std::string List() const { return dir_.path() + "/list.txt"; }
  std::string NetText(const std::string& param, const std::string& shard = "") const {
    return "layer { name: 'h5' type: 'HDF5Data' top: 'data' top: 'label' hdf5_data_param { "
           "source: '" +
           List() + "' " + param + " } " + (shard.empty() ? "" : "data_param { " + shard + " }") +
           " }";
  }
  template <typename Dtype = float>
  std::unique_ptr<Net<Dtype>> MakeNet(const std::string& text, std::uint64_t seed = 1701) {
    return std::make_unique<Net<Dtype>>(ReadNetParamsFromTextString(text, "test"), seed);
  }
  // The labels of the next batch, checking that each sample's data matches its label.
  template <typename Dtype = float>
  std::vector<int> Batch(Net<Dtype>* net) {
    net->Forward();
    const auto data = net->blob_by_name("data");
    const auto label = net->blob_by_name("label");
    std::vector<int> labels;
    for (int j = 0; j < label->count(); ++j) {
      const int s = static_cast<int>(label->cpu_data()[j]);
      for (int k = 0; k < 6; ++k) EXPECT_EQ(data->cpu_data()[6 * j + k], 10 * s + k);
      labels.push_back(s);
    }
    return labels;
  }

  TempDir dir_;
};

TEST_F(Hdf5DataLayerTest, ReadsRowsFileAfterFileAndWraps) {
  WriteFiles();
  auto net = MakeNet(NetText("batch_size: 4"));
  EXPECT_EQ(net->blob_by_name("data")->shape(), (std::vector<int>{4, 2, 3}));
  EXPECT_EQ(net->blob_by_name("label")->shape(), (std::vector<int>{4}));
  EXPECT_EQ(net->layers()[0]->batches_per_epoch(), 3u);
  EXPECT_EQ(Batch(net.get()), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(Batch(net.get()), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(Batch(net.get()), (std::vector<int>{8, 0, 1, 2}));
  auto doubles = MakeNet<double>(NetText("batch_size: 5"));
  EXPECT_EQ(Batch(doubles.get()), (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST_F(Hdf5DataLayerTest, ShuffleReordersFilesAndRowsEveryEpochBySeed) {
  WriteFiles();
  auto epochs = [&](std::uint64_t seed) {
    auto net = MakeNet(NetText("batch_size: 9 shuffle: true"), seed);
    std::vector<std::vector<int>> out;
    for (int e = 0; e < 4; ++e) out.push_back(Batch(net.get()));
    return out;
  };
  const auto a = epochs(7);
  EXPECT_EQ(a, epochs(7));
  EXPECT_NE(a, epochs(8));
  for (const auto& epoch : a) {
    EXPECT_EQ(std::set<int>(epoch.begin(), epoch.end()).size(), 9u);
    // As in Caffe, a file's rows stay together: each file's samples are contiguous.
    for (std::size_t i = 0; i < epoch.size(); ++i) {
      const auto file_of = [](int s) { return s < 3 ? 0 : s < 7 ? 1 : 2; };
      int run = 1;
      while (i + run < epoch.size() && file_of(epoch[i + run]) == file_of(epoch[i])) ++run;
      EXPECT_EQ(run, file_of(epoch[i]) == 0 ? 3 : file_of(epoch[i]) == 1 ? 4 : 2);
      i += run - 1;
    }
  }
  EXPECT_FALSE(a[0] == a[1] && a[1] == a[2] && a[2] == a[3]);
}

TEST_F(Hdf5DataLayerTest, ShardsUniteToTheSingleProcessBatch) {
  WriteFiles();
  for (const char* shuffle : {"", "shuffle: true"}) {
    SCOPED_TRACE(shuffle);
    auto single = MakeNet(NetText(std::string("batch_size: 4 ") + shuffle), 11);
    auto r0 = MakeNet(
        NetText(std::string("batch_size: 2 ") + shuffle, "shard_rank: 0 shard_size: 2"), 11);
    auto r1 = MakeNet(
        NetText(std::string("batch_size: 2 ") + shuffle, "shard_rank: 1 shard_size: 2"), 11);
    for (int k = 0; k < 7; ++k) {
      std::vector<int> together = Batch(r0.get());
      const std::vector<int> second = Batch(r1.get());
      together.insert(together.end(), second.begin(), second.end());
      EXPECT_EQ(together, Batch(single.get())) << "batch " << k;
    }
  }
}

TEST_F(Hdf5DataLayerTest, SeekingToTheStreamPositionRepeatsTheStream) {
  WriteFiles();
  auto straight = MakeNet(NetText("batch_size: 4 shuffle: true"));
  for (int k = 0; k < 3; ++k) Batch(straight.get());
  const std::uint64_t position = *straight->layers()[0]->stream_position();
  EXPECT_EQ(position, 12u);
  auto resumed = MakeNet(NetText("batch_size: 4 shuffle: true"));
  resumed->layers()[0]->SeekStream(position);
  for (int k = 0; k < 4; ++k) EXPECT_EQ(Batch(resumed.get()), Batch(straight.get()));
}

TEST_F(Hdf5DataLayerTest, BadFilesAreErrorsNamingFileAndDataset) {
  const std::string a = WriteFile("a.h5", 0, 3);
  const std::string layer = "layer 'h5' (HDF5Data)";

  WriteList({a, dir_.path() + "/absent.h5"});
  EXPECT_ERROR_WITH(MakeNet(NetText("batch_size: 2")), layer, "absent.h5", "line 3 of",
                    "cannot open");

  std::ofstream(dir_.path() + "/text.h5") << "not hdf5";
  WriteList({dir_.path() + "/text.h5"});
  EXPECT_ERROR_WITH(MakeNet(NetText("batch_size: 2")), layer, "text.h5", "not an HDF5 file");

  Hdf5Writer no_label;
  const std::vector<float> values(6, 1.f);
  no_label.Write("data", {3, 2}, values.data());
  WriteFileAtomically(no_label.Image(), dir_.path() + "/no_label.h5");
  WriteList({a, dir_.path() + "/no_label.h5"});
  EXPECT_ERROR_WITH(MakeNet(NetText("batch_size: 2")), layer, "no_label.h5", "no dataset 'label'");

  Hdf5Writer uneven;
  uneven.Write("data", {3, 2}, values.data());
  uneven.Write("label", {2}, values.data());
  WriteFileAtomically(uneven.Image(), dir_.path() + "/uneven.h5");
  WriteList({dir_.path() + "/uneven.h5"});
  EXPECT_ERROR_WITH(MakeNet(NetText("batch_size: 2")), layer, "uneven.h5",
                    "dataset 'label' has 2 rows but dataset 'data' has 3");

  // Samples of another rank (2 axes after the first, where a.h5 has 2 x 3 ...).
  Hdf5Writer flat;
  flat.Write("data", {1, 6}, values.data());
  flat.Write("label", {1}, values.data());
  WriteFileAtomically(flat.Image(), dir_.path() + "/flat.h5");
  WriteList({a, dir_.path() + "/flat.h5"});
  EXPECT_ERROR_WITH(MakeNet(NetText("batch_size: 2")), layer, "flat.h5", "dataset 'data'",
                    "samples of shape 6 (1 axes after the first)", "a.h5", "2 x 3");

  // ... and a single value where a dataset of samples belongs.
  Hdf5Writer scalar;
  scalar.Write("data", {}, values.data());
  scalar.Write("label", {1}, values.data());
  WriteFileAtomically(scalar.Image(), dir_.path() + "/scalar.h5");
  WriteList({dir_.path() + "/scalar.h5"});
  EXPECT_ERROR_WITH(MakeNet(NetText("batch_size: 2")), layer, "scalar.h5",
                    "dataset 'data' is a single value");
}

TEST_F(Hdf5DataLayerTest, BadListsAndParameters) {
  const std::string layer = "layer 'h5' (HDF5Data)";
  WriteList({WriteFile("empty.h5", 0, 0)});
  EXPECT_ERROR_WITH(MakeNet(NetText("batch_size: 2")), layer, "hold no samples");
  std::ofstream(List()) << "\n   \n";
  EXPECT_ERROR_WITH(MakeNet(NetText("batch_size: 2")), layer, "names no HDF5 files");
  std::filesystem::remove(List());
  EXPECT_ERROR_WITH(MakeNet(NetText("batch_size: 2")), layer, List(), "cannot open");
  WriteList({WriteFile("a.h5", 0, 3)});
  EXPECT_ERROR_WITH(MakeNet(NetText("")), layer, "hdf5_data_param.batch_size");
  EXPECT_ERROR_WITH(MakeNet(NetText("batch_size: 2", "shard_rank: 2 shard_size: 2")), layer,
                    "shard_rank 2");
  EXPECT_ERROR_WITH(
      MakeNet(
          "layer { name: 'h5' type: 'HDF5Data' top: 'data' hdf5_data_param { batch_size: 1 } }"),
      layer, "hdf5_data_param.source");
}

TEST_F(Hdf5DataLayerTest, OutputLayerAppendsEveryBatchAndReadsBack) {
  WriteFiles();
  const std::string out = dir_.path() + "/out.h5";
  auto net = MakeNet(NetText("batch_size: 4") +
                     "layer { name: 'save' type: 'HDF5Output' bottom: 'data' bottom: 'label' "
                     "hdf5_output_param { file_name: '" +
                     out + "' } }");
  std::vector<int> expected;
  for (int k = 0; k < 2; ++k) {
    const std::vector<int> labels = Batch(net.get());
    expected.insert(expected.end(), labels.begin(), labels.end());
  }
  net.reset();  // closes the file
  Hdf5Reader file(out);
  EXPECT_EQ(file.Shape("data"), (std::vector<std::uint64_t>{8, 2, 3}));
  EXPECT_EQ(file.Shape("label"), (std::vector<std::uint64_t>{8}));
  const std::vector<float> data = file.Read<float>("data");
  const std::vector<float> label = file.Read<float>("label");
  for (int j = 0; j < 8; ++j) {
    EXPECT_EQ(label[j], expected[j]);
    for (int k = 0; k < 6; ++k) EXPECT_EQ(data[6 * j + k], 10 * expected[j] + k);
  }
  // The file is a list entry the data layer reads back.
  WriteList({out});
  auto again = MakeNet(NetText("batch_size: 8"));
  EXPECT_EQ(Batch(again.get()), expected);

  EXPECT_ERROR_WITH(
      MakeNet(NetText("batch_size: 1") + "layer { name: 'save' type: 'HDF5Output' bottom: 'data' "
                                         "bottom: 'label' }"),
      "layer 'save' (HDF5Output)", "hdf5_output_param.file_name");
  EXPECT_ERROR_WITH(MakeNet(NetText("batch_size: 1") +
                            "layer { name: 'save' type: 'HDF5Output' bottom: 'data' "
                            "bottom: 'label' hdf5_output_param { file_name: '" +
                            dir_.path() + "/no/such/dir/out.h5' } }"),
                    "layer 'save' (HDF5Output)", "no/such/dir/out.h5", "cannot create");
}

}  // namespace
}  // namespace doppio
