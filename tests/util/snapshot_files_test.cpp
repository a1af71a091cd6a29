// Weights and solver states in Caffe's HDF5 layouts, chosen by the ".h5" ending.
#include "doppio/util/snapshot_files.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <google/protobuf/util/message_differencer.h>

#include "doppio/util/hdf5.hpp"
#include "doppio/util/io.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

using google::protobuf::util::MessageDifferencer;

BlobProto FloatBlob(const std::vector<int>& shape, float first, bool with_diff = false) {
  BlobProto blob;
  int count = 1;
  for (int d : shape) {
    blob.mutable_shape()->add_dim(d);
    count *= d;
  }
  for (int i = 0; i < count; ++i) {
    blob.add_data(first + 0.25f * i);
    if (with_diff) blob.add_diff(-first - i);
  }
  return blob;
}

BlobProto DoubleBlob(const std::vector<int>& shape, double first) {
  BlobProto blob;
  int count = 1;
  for (int d : shape) {
    blob.mutable_shape()->add_dim(d);
    count *= d;
  }
  for (int i = 0; i < count; ++i) blob.add_double_data(first + 1e-12 * i);
  return blob;
}

// Weights as Net::ToProto writes them: layers without blobs, a '/' in a name, float and
// double blobs.
NetParameter SomeWeights(bool with_diff) {
  NetParameter weights;
  weights.set_name("net");
  weights.add_layer()->set_name("data");
  LayerParameter* conv = weights.add_layer();
  conv->set_name("inception/1x1");
  *conv->add_blobs() = FloatBlob({2, 1, 3, 3}, 0.5f, with_diff);
  *conv->add_blobs() = FloatBlob({2}, -1.f, with_diff);
  LayerParameter* ip = weights.add_layer();
  ip->set_name("ip");
  *ip->add_blobs() = with_diff ? FloatBlob({4, 5}, 3.f, true) : DoubleBlob({4, 5}, 3.0);
  return weights;
}

// The blobs of each layer that has any, by name: what a weights file carries.
std::map<std::string, std::vector<std::string>> BlobsByLayer(const NetParameter& weights) {
  std::map<std::string, std::vector<std::string>> out;
  for (const LayerParameter& layer : weights.layer()) {
    for (const BlobProto& blob : layer.blobs()) {
      BlobProto data = blob;
      data.clear_diff();
      data.clear_double_diff();
      out[layer.name()].push_back(data.SerializeAsString());
    }
  }
  return out;
}

class SnapshotFilesTest : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) const { return dir_.path() + "/" + name; }
  TempDir dir_;
};

TEST_F(SnapshotFilesTest, WeightsRoundTripInCaffesLayout) {
  for (bool with_diff : {false, true}) {
    SCOPED_TRACE(with_diff ? "with diffs" : "data only");
    const NetParameter weights = SomeWeights(with_diff);
    const std::string path = Path("w.caffemodel.h5");
    WriteWeightsFile(weights, path);
    NetParameter back;
    ReadWeightsFile(path, &back);
    EXPECT_EQ(BlobsByLayer(back), BlobsByLayer(weights));

    Hdf5Reader file(path);
    EXPECT_EQ(file.Shape("data/inception/1x1/0"), (std::vector<std::uint64_t>{2, 1, 3, 3}));
    EXPECT_EQ(file.Shape("data/ip/0"), (std::vector<std::uint64_t>{4, 5}));
    EXPECT_EQ(file.IsDouble("data/ip/0"), !with_diff);
    EXPECT_TRUE(file.IsGroup("data/data"));  // Caffe's group for a layer without weights
    EXPECT_EQ(file.Has("diff/ip/0"), with_diff);
    if (with_diff) EXPECT_EQ(file.Read<float>("diff/inception/1x1/0")[1], -1.5f);
  }
  // The binary format by any other name.
  WriteWeightsFile(SomeWeights(false), Path("w.caffemodel"));
  NetParameter binary;
  ReadProtoFromBinaryFile(Path("w.caffemodel"), &binary);
  EXPECT_EQ(binary.layer_size(), 3);
}

TEST_F(SnapshotFilesTest, WeightsThatDoNotFitTheLayoutAreErrors) {
  NetParameter twice = SomeWeights(false);
  *twice.add_layer() = twice.layer(2);
  ExpectError([&] { WriteWeightsFile(twice, Path("t.h5")); },
              {"t.h5", "two layers named 'ip'", "BINARYPROTO"});
  EXPECT_FALSE(std::filesystem::exists(Path("t.h5")));

  // Caffe leaves out a blob shared with another layer; a gap cannot be filled here.
  Hdf5Writer gap;
  const std::vector<float> one = {1.f};
  gap.Write("data/ip/1", {1}, one.data());
  WriteFileAtomically(gap.Image(), Path("gap.h5"));
  NetParameter weights;
  ExpectError([&] { ReadWeightsFile(Path("gap.h5"), &weights); },
              {"gap.h5", "layer 'ip'", "blob 1 but not blob 0"});

  Hdf5Writer other;
  other.Write("weights", {1}, one.data());
  WriteFileAtomically(other.Image(), Path("other.h5"));
  ExpectError([&] { ReadWeightsFile(Path("other.h5"), &weights); },
              {"other.h5", "no group 'data'"});
  std::ofstream(Path("text.h5")) << "plain text";
  ExpectError([&] { ReadWeightsFile(Path("text.h5"), &weights); }, {"text.h5", "not an HDF5 file"});
  ExpectError([&] { ReadWeightsFile(Path("absent.h5"), &weights); }, {"absent.h5", "cannot open"});
}

TEST_F(SnapshotFilesTest, SolverStateRoundTripsEveryField) {
  // A new field of SolverState needs a place in the HDF5 layout (snapshot_files.cpp).
  ASSERT_EQ(SolverState::descriptor()->field_count(), 9);
  SolverState state;
  state.set_iter(1234);
  state.set_learned_net(Path("lsq_iter_1234.caffemodel.h5"));
  state.set_current_step(3);
  for (int i = 0; i < 11; ++i) *state.add_history() = FloatBlob({i % 3 + 1, 2}, 0.1f * i);
  state.set_history_in_caffe_order(true);
  DataPosition* position = state.add_data_position();
  position->set_layer("data#1");
  position->set_position(std::uint64_t(1) << 40);
  position = state.add_data_position();
  position->set_layer("images/train");
  position->set_position(5);
  CompressionState* compression = state.mutable_compression();
  compression->set_method("powersgd:2");
  compression->set_num_ranks(2);
  *compression->add_residual() = FloatBlob({3, 2}, 0.5f);
  *compression->add_residual() = FloatBlob({3, 2}, -0.25f);
  *compression->mutable_shared() = FloatBlob({2, 2}, 2.f);
  state.set_loss_scale(32768.f);
  state.set_loss_scale_clean_updates(17);
  const std::string path = Path("s.solverstate.h5");
  WriteSolverStateFile(state, path);
  SolverState back;
  ReadSolverStateFile(path, &back);
  EXPECT_TRUE(MessageDifferencer::Equals(back, state)) << back.DebugString();
  // Top-k's momentum-corrected state, version 1: its velocities and momentum too.
  compression->set_method("topk:0.01");
  compression->set_version(1);
  compression->set_momentum(0.9);
  *compression->add_velocity() = FloatBlob({3, 2}, 1.5f);
  *compression->add_velocity() = FloatBlob({3, 2}, -1.5f);
  WriteSolverStateFile(state, Path("topk.solverstate.h5"));
  SolverState topk_back;
  ReadSolverStateFile(Path("topk.solverstate.h5"), &topk_back);
  EXPECT_TRUE(MessageDifferencer::Equals(topk_back, state)) << topk_back.DebugString();

  // Caffe's names and shapes.
  Hdf5Reader file(path);
  EXPECT_EQ(file.ReadInt("iter"), 1234);
  EXPECT_EQ(file.ReadString("learned_net"), state.learned_net());
  EXPECT_EQ(file.ReadInt("current_step"), 3);
  EXPECT_EQ(file.Members("history").size(), 11u);
  EXPECT_EQ(file.Shape("history/10"), (std::vector<std::uint64_t>{2, 2}));

  std::ofstream(Path("bad.h5")) << "x";
  ExpectError([&] { ReadSolverStateFile(Path("bad.h5"), &back); }, {"bad.h5", "not an HDF5 file"});
  WriteWeightsFile(SomeWeights(false), Path("w.h5"));
  ExpectError([&] { ReadSolverStateFile(Path("w.h5"), &back); },
              {"w.h5", "not an HDF5 solver state"});
}

}  // namespace
}  // namespace doppio
