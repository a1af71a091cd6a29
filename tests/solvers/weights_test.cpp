// Loading trained weights: files Doppio writes, files in Caffe's wire layout crafted byte by
// byte (current and V1 layer formats), several files, and files that must be refused.
#include "doppio/solvers/weights.hpp"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <gtest/gtest.h>

#include <cstring>

#include "doppio/util/hdf5.hpp"
#include "doppio/util/io.hpp"
#include "solver_test_util.hpp"

namespace doppio {
namespace {

using google::protobuf::io::CodedOutputStream;
using google::protobuf::io::StringOutputStream;
using solver_test::ReadFile;
using solver_test::WriteFile;

// Wire format by hand: tag = field_number << 3 | wire_type.
constexpr int kVarint = 0;
constexpr int kLengthDelimited = 2;

std::string Encode(const std::function<void(CodedOutputStream&)>& write) {
  std::string bytes;
  {
    StringOutputStream stream(&bytes);
    CodedOutputStream out(&stream);
    write(out);
  }  // the CodedOutputStream flushes when it goes
  return bytes;
}

std::string LengthDelimited(int field, const std::string& payload) {
  return Encode([&](CodedOutputStream& out) {
    out.WriteTag(static_cast<std::uint32_t>(field << 3 | kLengthDelimited));
    out.WriteVarint32(static_cast<std::uint32_t>(payload.size()));
    out.WriteString(payload);
  });
}

std::string VarintField(int field, std::uint64_t value) {
  return Encode([&](CodedOutputStream& out) {
    out.WriteTag(static_cast<std::uint32_t>(field << 3 | kVarint));
    out.WriteVarint64(value);
  });
}

std::string PackedFloats(const std::vector<float>& values) {
  return Encode([&](CodedOutputStream& out) {
    for (float value : values) {
      std::uint32_t bits;
      std::memcpy(&bits, &value, sizeof(bits));
      out.WriteLittleEndian32(bits);
    }
  });
}

std::string PackedVarints(const std::vector<std::int64_t>& values) {
  return Encode([&](CodedOutputStream& out) {
    for (auto value : values) out.WriteVarint64(static_cast<std::uint64_t>(value));
  });
}

// BlobProto { shape (7) { dim (1, packed) } data (5, packed float) }
std::string CaffeBlob(const std::vector<std::int64_t>& shape, const std::vector<float>& data) {
  return LengthDelimited(7, LengthDelimited(1, PackedVarints(shape))) +
         LengthDelimited(5, PackedFloats(data));
}

// LayerParameter { name (1) type (2) blobs (7)... }
std::string CaffeLayer(const std::string& name, const std::string& type,
                       const std::vector<std::string>& blobs) {
  std::string layer = LengthDelimited(1, name) + LengthDelimited(2, type);
  for (const auto& blob : blobs) layer += LengthDelimited(7, blob);
  return layer;
}

// NetParameter { name (1) layer (100)... }
std::string CaffeNet(const std::string& name, const std::vector<std::string>& layers) {
  std::string net = LengthDelimited(1, name);
  for (const auto& layer : layers) net += LengthDelimited(100, layer);
  return net;
}

// Old format: V1 BlobProto with num (1) channels (2) height (3) width (4), data (5).
std::string V1Blob(int num, int channels, int height, int width, const std::vector<float>& data) {
  return VarintField(1, num) + VarintField(2, channels) + VarintField(3, height) +
         VarintField(4, width) + LengthDelimited(5, PackedFloats(data));
}

// V1LayerParameter { name (4) type (5, enum; 14 is INNER_PRODUCT) blobs (6)... } in
// NetParameter.layers (2).
std::string V1Net(const std::string& layer_name, const std::vector<std::string>& blobs) {
  std::string layer = LengthDelimited(4, layer_name) + VarintField(5, 14);
  for (const auto& blob : blobs) layer += LengthDelimited(6, blob);
  return LengthDelimited(1, "v1net") + LengthDelimited(2, layer);
}

const char* kNet = R"(
  name: 'small'
  layer { name: 'data' type: 'Input' top: 'x' input_param { shape { dim: 4 dim: 3 } } }
  layer { name: 'ip' type: 'InnerProduct' bottom: 'x' top: 'h'
          inner_product_param { num_output: 2 weight_filler { type: 'gaussian' } } }
  layer { name: 'ip2' type: 'InnerProduct' bottom: 'h' top: 'out'
          inner_product_param { num_output: 1 weight_filler { type: 'gaussian' } } })";

const std::vector<float> kWeights = {0.5f, -1.25f, 2.0f, 3.5f, -0.125f, 7.0f};
const std::vector<float> kBias = {0.25f, -4.0f};

template <typename Dtype>
class WeightsTest : public ::testing::Test {
 protected:
  std::unique_ptr<Net<Dtype>> MakeNet(std::uint64_t seed = 1) {
    return std::make_unique<Net<Dtype>>(ParseText<NetParameter>(kNet), seed);
  }
  std::string Write(const std::string& name, const std::string& bytes) {
    const std::string path = dir_.path() + "/" + name;
    WriteFile(path, bytes);
    return path;
  }
  void ExpectIpHolds(const Net<Dtype>& net, const std::vector<float>& weights,
                     const std::vector<float>& bias) {
    const auto& blobs = net.layer_by_name("ip")->blobs();
    ASSERT_EQ(blobs[0]->count(), static_cast<int>(weights.size()));
    for (std::size_t i = 0; i < weights.size(); ++i) {
      EXPECT_EQ(blobs[0]->cpu_data()[i], Dtype(weights[i])) << "weight " << i;
    }
    for (std::size_t i = 0; i < bias.size(); ++i) {
      EXPECT_EQ(blobs[1]->cpu_data()[i], Dtype(bias[i])) << "bias " << i;
    }
  }
  TempDir dir_;
};
TYPED_TEST_SUITE(WeightsTest, TestDtypes);

TYPED_TEST(WeightsTest, ModelWrittenByDoppioLoads) {
  auto source = this->MakeNet(1);
  NetParameter param;
  source->ToProto(&param);
  const std::string file = this->dir_.path() + "/doppio.caffemodel";
  WriteProtoToBinaryFile(param, file);
  auto target = this->MakeNet(2);
  ASSERT_NE(target->layer_by_name("ip")->blobs()[0]->cpu_data()[0],
            source->layer_by_name("ip")->blobs()[0]->cpu_data()[0]);
  LoadNetWeights(target.get(), file);
  for (const char* layer : {"ip", "ip2"}) {
    for (int b = 0; b < 2; ++b) {
      const auto& from = *source->layer_by_name(layer)->blobs()[b];
      const auto& to = *target->layer_by_name(layer)->blobs()[b];
      for (int i = 0; i < from.count(); ++i) EXPECT_EQ(to.cpu_data()[i], from.cpu_data()[i]);
    }
  }
}

TYPED_TEST(WeightsTest, ModelInCaffesWireLayoutLoads) {
  const std::string bytes = CaffeNet(
      "caffe_net",
      {CaffeLayer("data", "Input", {}),
       CaffeLayer("ip", "InnerProduct", {CaffeBlob({2, 3}, kWeights), CaffeBlob({2}, kBias)})});
  // The bytes are a valid NetParameter to protobuf itself.
  NetParameter check;
  ASSERT_TRUE(check.ParseFromString(bytes));
  ASSERT_EQ(check.layer_size(), 2);
  EXPECT_EQ(check.layer(1).blobs(0).data_size(), 6);
  const std::string file = this->Write("caffe.caffemodel", bytes);
  auto net = this->MakeNet();
  const TypeParam ip2_before = net->layer_by_name("ip2")->blobs()[0]->cpu_data()[0];
  LoadNetWeights(net.get(), file);
  this->ExpectIpHolds(*net, kWeights, kBias);
  // Layers absent from the file keep their values (fine-tuning).
  EXPECT_EQ(net->layer_by_name("ip2")->blobs()[0]->cpu_data()[0], ip2_before);
  // Net's own loader reads it too.
  auto other = this->MakeNet(9);
  other->CopyTrainedLayersFromFile(file);
  this->ExpectIpHolds(*other, kWeights, kBias);
}

// Caffe's HDF5 weights (/data/<layer>/<blob index>), chosen by the ".h5" ending, load like a
// .caffemodel: alone, with Net's own loader, and in a list with a .caffemodel.
TYPED_TEST(WeightsTest, Hdf5WeightsLoadByTheirEnding) {
  Hdf5Writer caffe;
  caffe.CreateGroup("data/data");
  caffe.Write("data/ip/0", {2, 3}, kWeights.data());
  const std::vector<double> bias(kBias.begin(), kBias.end());
  caffe.Write("data/ip/1", {2}, bias.data());
  const std::string file = this->dir_.path() + "/caffe.caffemodel.h5";
  WriteFileAtomically(caffe.Image(), file);

  auto net = this->MakeNet();
  const TypeParam ip2_before = net->layer_by_name("ip2")->blobs()[0]->cpu_data()[0];
  LoadNetWeights(net.get(), file);
  this->ExpectIpHolds(*net, kWeights, kBias);
  EXPECT_EQ(net->layer_by_name("ip2")->blobs()[0]->cpu_data()[0], ip2_before);
  auto other = this->MakeNet(9);
  other->CopyTrainedLayersFromFile(file);
  this->ExpectIpHolds(*other, kWeights, kBias);

  // A later file of the list wins, whatever its format.
  const std::vector<float> weights2(6, 9.f);
  const std::string binary = this->Write(
      "later.caffemodel",
      CaffeNet("n", {CaffeLayer("ip", "InnerProduct",
                                {CaffeBlob({2, 3}, weights2), CaffeBlob({2}, kBias)})}));
  auto both = this->MakeNet();
  LoadNetWeights(both.get(), file + "," + binary);
  this->ExpectIpHolds(*both, weights2, kBias);

  Hdf5Writer wrong;
  wrong.Write("data/ip/0", {3, 3}, std::vector<float>(9, 1.f).data());
  wrong.Write("data/ip/1", {2}, kBias.data());
  WriteFileAtomically(wrong.Image(), this->dir_.path() + "/wrong.h5");
  EXPECT_ERROR_WITH(LoadNetWeights(net.get(), this->dir_.path() + "/wrong.h5"), "'ip'", "blob 0",
                    "3 3", "2 3");
  // A binary .caffemodel named .h5 is read as HDF5, as Caffe reads it, and refused.
  const std::string misnamed = this->Write("binary.h5", ReadFile(binary));
  EXPECT_ERROR_WITH(LoadNetWeights(net.get(), misnamed), "binary.h5", "not an HDF5 file");
}

TYPED_TEST(WeightsTest, ModelInCaffesV1LayoutLoads) {
  const std::string file = this->Write(
      "v1.caffemodel", V1Net("ip", {V1Blob(1, 1, 2, 3, kWeights), V1Blob(1, 1, 1, 2, kBias)}));
  auto net = this->MakeNet();
  LoadNetWeights(net.get(), file);
  this->ExpectIpHolds(*net, kWeights, kBias);
}

TYPED_TEST(WeightsTest, SeveralFilesLoadInOrder) {
  const std::string first = this->Write(
      "first.caffemodel",
      CaffeNet("a", {CaffeLayer("ip", "InnerProduct",
                                {CaffeBlob({2, 3}, {1, 1, 1, 1, 1, 1}), CaffeBlob({2}, {1, 1})}),
                     CaffeLayer("ip2", "InnerProduct",
                                {CaffeBlob({1, 2}, {5, 6}), CaffeBlob({1}, {7})})}));
  const std::string second = this->Write(
      "second.caffemodel",
      CaffeNet("b", {CaffeLayer("ip", "InnerProduct",
                                {CaffeBlob({2, 3}, kWeights), CaffeBlob({2}, kBias)})}));
  auto net = this->MakeNet();
  LoadNetWeights(net.get(), first + "," + second);
  this->ExpectIpHolds(*net, kWeights, kBias);
  const auto& ip2 = net->layer_by_name("ip2")->blobs();
  EXPECT_EQ(ip2[0]->cpu_data()[1], TypeParam(6));
  EXPECT_EQ(ip2[1]->cpu_data()[0], TypeParam(7));
}

TYPED_TEST(WeightsTest, ShapeMismatchIsRefusedNamingLayerBlobAndShapes) {
  const std::string file = this->Write(
      "wrong.caffemodel", CaffeNet("w", {CaffeLayer("ip", "InnerProduct",
                                                    {CaffeBlob({3, 3}, std::vector<float>(9, 1.f)),
                                                     CaffeBlob({2}, kBias)})}));
  auto net = this->MakeNet();
  EXPECT_ERROR_WITH(LoadNetWeights(net.get(), file), "'ip'", "blob 0", "3 3", "2 3");
}

TYPED_TEST(WeightsTest, FilesThatAreNotNetParametersAreRefused) {
  auto net = this->MakeNet();
  EXPECT_ERROR_WITH(LoadNetWeights(net.get(), this->dir_.path() + "/absent.caffemodel"),
                    "absent.caffemodel");
  const std::string text = this->Write("net.prototxt", kNet);
  EXPECT_ERROR_WITH(LoadNetWeights(net.get(), text), "net.prototxt");
  const std::string empty = this->Write("empty.caffemodel", "");
  EXPECT_ERROR_WITH(LoadNetWeights(net.get(), empty), "empty.caffemodel", "not a .caffemodel");
  const std::string junk = this->Write("junk.caffemodel", std::string("\xff\xfe\x00\x01junk", 8));
  EXPECT_ERROR_WITH(LoadNetWeights(net.get(), junk), "junk.caffemodel");
  // A solver state parses leniently as a NetParameter but shares no layer with the net.
  SolverState state;
  state.set_iter(10);
  state.set_learned_net("x_iter_10.caffemodel");
  state.add_history()->add_data(1.0f);
  std::string state_bytes;
  ASSERT_TRUE(state.SerializeToString(&state_bytes));
  const std::string state_file = this->Write("x_iter_10.solverstate", state_bytes);
  EXPECT_ERROR_WITH(LoadNetWeights(net.get(), state_file), "x_iter_10.solverstate");
  // Weights of an unrelated net.
  const std::string unrelated =
      this->Write("unrelated.caffemodel",
                  CaffeNet("u", {CaffeLayer("conv1", "Convolution", {CaffeBlob({1}, {1.f})})}));
  EXPECT_ERROR_WITH(LoadNetWeights(net.get(), unrelated), "unrelated.caffemodel", "none of its");
}

}  // namespace
}  // namespace doppio
