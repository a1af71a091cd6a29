// The traits each layer type registers, and how the registry refuses types Doppio does not
// run and types it does not know.
#include "doppio/core/layer_registry.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "doppio/core/net.hpp"
#include "doppio/data/shard.hpp"
#include "doppio/layers/base_data_layer.hpp"
#include "doppio/layers/batch_norm_layer.hpp"
#include "doppio/layers/hdf5_data_layer.hpp"
#include "doppio/layers/memory_data_layer.hpp"
#include "doppio/util/io.hpp"
#include "synthetic_inputs.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

LayerParameter Param(const std::string& name, const std::string& type) {
  return ParseText<LayerParameter>("name: '" + name + "' type: '" + type + "'");
}

// A type's traits must match what its layer does: the layers that read records (the
// prefetching data layers and HDF5Data) are data sources that shard, MemoryData (fed by its
// caller) is a data source that does not, and BatchNorm keeps per-rank state.
TEST(LayerRegistryTest, EveryTypesTraitsMatchItsLayer) {
  const std::vector<std::string> types = LayerRegistry<float>::Types();
  ASSERT_FALSE(types.empty());
  for (const std::string& type : types) {
    SCOPED_TRACE(type);
    const LayerTraits& traits = LayerTypeTraits(type);
    EXPECT_TRUE(traits.unsupported.empty());
    if (type == "Python") {
      // A Python layer needs its module to be made (python/tests): it takes a shard, which
      // its object reads, and reads no records of Doppio's.
      EXPECT_NE(traits.shard, nullptr);
      EXPECT_FALSE(traits.reads_data);
      continue;
    }
    const auto layer = LayerRegistry<float>::CreateLayer(Param("l", type));
    const bool reads_records =
        dynamic_cast<BasePrefetchingDataLayer<float>*>(layer.get()) != nullptr ||
        dynamic_cast<HDF5DataLayer<float>*>(layer.get()) != nullptr;
    const bool fed = dynamic_cast<MemoryDataLayer<float>*>(layer.get()) != nullptr;
    EXPECT_EQ(traits.reads_data, reads_records || fed);
    EXPECT_EQ(traits.shard != nullptr, reads_records);
    EXPECT_EQ(traits.per_rank_state, dynamic_cast<BatchNormLayer<float>*>(layer.get()) != nullptr);
  }
}

TEST(LayerRegistryTest, ShardSetsTheParametersTheLayerReads) {
  LayerParameter data = Param("d", "Data");
  LayerTypeTraits("Data").shard(&data, 1, 4);
  EXPECT_EQ(data.data_param().shard_rank(), 1);
  EXPECT_EQ(data.data_param().shard_size(), 4);
  LayerParameter images = Param("i", "ImageData");
  LayerTypeTraits("ImageData").shard(&images, 3, 4);
  EXPECT_EQ(images.image_data_param().shard_rank(), 3);
  EXPECT_EQ(images.image_data_param().shard_size(), 4);
}

TEST(LayerRegistryTest, AnUnknownTypeHasTheDefaultTraits) {
  const LayerTraits& traits = LayerTypeTraits("Teleport");
  EXPECT_FALSE(traits.reads_data);
  EXPECT_EQ(traits.shard, nullptr);
  EXPECT_FALSE(traits.per_rank_state);
  EXPECT_TRUE(traits.unsupported.empty());
}

TEST(LayerRegistryTest, AnUnknownTypeIsAnErrorNamingLayerAndType) {
  ExpectError([] { LayerRegistry<float>::CreateLayer(Param("mystery", "Teleport")); },
              {"layer 'mystery'", "unknown type 'Teleport'", "known types:", "Convolution"});
}

// A Caffe type Doppio refuses is refused when the net is built, naming the layer and why, and
// is not offered as a known type.
TEST(LayerRegistryTest, UnsupportedTypesAreRefusedWithTheirReason) {
  const std::vector<std::string> known = LayerRegistry<double>::Types();
  const std::string type = "Recurrent";
  const std::string why = LayerTypeTraits(type).unsupported;
  EXPECT_NE(why.find("not supported"), std::string::npos) << why;
  EXPECT_EQ(std::find(known.begin(), known.end(), type), known.end());
  ExpectError([&] { LayerRegistry<double>::CreateLayer(Param("x", type)); },
              {"layer 'x' (" + type + "): " + why});
}

TEST(LayerRegistryTest, NetWithAnUnsupportedLayerFailsToBuild) {
  const NetParameter param = ReadNetParamsFromTextString(
      "layer { name: 'x' type: 'DummyData' top: 'x' dummy_data_param { shape { dim: 1 } } } "
      "layer { name: 'r' type: 'Recurrent' bottom: 'x' top: 'y' }",
      "test");
  // The reason says why and what to do instead.
  ExpectError([&] { Net<float> net(param); },
              {"layer 'r' (Recurrent)", "not supported", "use type: \"RNN\""});
}

// The users of the traits: sharding and `doppio time`'s constant inputs.
TEST(LayerRegistryTest, ShardingAndSyntheticInputsFollowTheTraits) {
  NetParameter param = ParseText<NetParameter>(
      "layer { name: 'a' type: 'Data' top: 'x' top: 'y' data_param { batch_size: 4 } } "
      "layer { name: 'b' type: 'HDF5Data' top: 'h' top: 'z' hdf5_data_param { batch_size: 2 } } "
      "layer { name: 'c' type: 'BatchNorm' bottom: 'x' top: 'x' } "
      "layer { name: 'd' type: 'WindowData' top: 'w' top: 'v' window_data_param { batch_size: 3 } "
      "data_param { prefetch: 2 } }");
  EXPECT_EQ(ShardDataLayers(&param, 1, 2), 3);
  EXPECT_EQ(param.layer(0).data_param().shard_size(), 2);
  // HDF5Data takes its shard from data_param: Caffe's hdf5_data_param has no field for it.
  EXPECT_EQ(param.layer(1).data_param().shard_rank(), 1);
  EXPECT_EQ(param.layer(1).data_param().shard_size(), 2);
  // So does WindowData.
  EXPECT_EQ(param.layer(3).data_param().shard_rank(), 1);

  const NetParameter synthetic = WithSyntheticInputs(param, 0, {1, 2, 2});
  EXPECT_EQ(synthetic.layer(0).type(), "DummyData");
  EXPECT_EQ(synthetic.layer(0).dummy_data_param().shape(0).dim(0), 4);
  EXPECT_EQ(synthetic.layer(1).type(), "DummyData");
  EXPECT_EQ(synthetic.layer(1).dummy_data_param().shape(0).dim(0), 2);
  EXPECT_EQ(synthetic.layer(2).type(), "BatchNorm");
  // window_data_param's batch, not data_param's.
  EXPECT_EQ(synthetic.layer(3).dummy_data_param().shape(0).dim(0), 3);
}

}  // namespace
}  // namespace doppio
