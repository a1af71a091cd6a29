#include "synthetic_inputs.hpp"

#include <glog/logging.h>
#include <google/protobuf/message.h>

#include <memory>
#include <sstream>
#include <string>

#include "doppio/core/blob.hpp"
#include "doppio/core/layer.hpp"
#include "doppio/core/layer_registry.hpp"
#include "doppio/core/net.hpp"

namespace doppio {

namespace {

// Each data layer type's own parameter block, which holds its batch size and source (the
// others may carry a data_param too, for prefetch or HDF5Data's shard), and what of the source
// gives the shape, for the log and the errors. MemoryData has no source.
struct DataBlock {
  const char* type;
  const char* field;
  const char* first;
};
constexpr DataBlock kDataBlocks[] = {
    {"Data", "data_param", "the first record of LMDB"},
    {"ImageData", "image_data_param", "the first image listed in"},
    {"HDF5Data", "hdf5_data_param", "the first file listed in"},
    {"WindowData", "window_data_param", "the first window of"},
    {"MemoryData", "memory_data_param", nullptr},
};

const DataBlock* BlockOf(const LayerParameter& layer) {
  for (const DataBlock& block : kDataBlocks) {
    if (layer.type() == block.type) return &block;
  }
  return nullptr;
}

// The block's field `name` (batch_size or source) through protobuf's reflection, which the
// table above needs to name the blocks once.
const google::protobuf::Message& BlockMessage(const LayerParameter& layer, const DataBlock& block) {
  return layer.GetReflection()->GetMessage(
      layer, LayerParameter::descriptor()->FindFieldByName(block.field));
}

int BatchSize(const LayerParameter& layer, int batch) {
  if (batch > 0) return batch;
  const DataBlock* block = BlockOf(layer);
  if (block == nullptr) return 1;
  const google::protobuf::Message& message = BlockMessage(layer, *block);
  return static_cast<int>(message.GetReflection()->GetUInt32(
      message, message.GetDescriptor()->FindFieldByName("batch_size")));
}

void SetBatchSize(LayerParameter* layer, int batch) {
  const DataBlock* block = BlockOf(*layer);
  if (block == nullptr) return;
  google::protobuf::Message* message = layer->GetReflection()->MutableMessage(
      layer, LayerParameter::descriptor()->FindFieldByName(block->field));
  message->GetReflection()->SetUInt32(
      message, message->GetDescriptor()->FindFieldByName("batch_size"), batch);
}

// Whether Net keeps `layer` in a net of `state` (its include and exclude rules).
bool InState(const NetState& state, const LayerParameter& layer) {
  NetParameter alone;
  *alone.mutable_state() = state;
  *alone.add_layer() = layer;
  return Net<float>::FilterNet(alone).layer_size() == 1;
}

// What a data layer reads its first sample from, for the log and the errors.
struct Source {
  std::string field;  // e.g. "data_param.source"; empty for a layer without a source
  std::string path;
  std::string first;  // where in it the shape comes from
};

Source SourceOf(const LayerParameter& layer) {
  const DataBlock* block = BlockOf(layer);
  if (block == nullptr || block->first == nullptr) return {};
  const google::protobuf::Message& message = BlockMessage(layer, *block);
  const std::string path = message.GetReflection()->GetString(
      message, message.GetDescriptor()->FindFieldByName("source"));
  return {std::string(block->field) + ".source", path, block->first};
}

// The shapes of the layer's tops as its own set-up makes them from its source, at batch 1,
// reading no batch ahead and decoding on one thread, so that probing costs one sample.
std::vector<std::vector<int>> TopShapesFromSource(LayerParameter layer, Phase phase) {
  SetBatchSize(&layer, 1);
  if (layer.has_data_param()) layer.mutable_data_param()->set_prefetch(1);
  if (!layer.has_phase()) layer.set_phase(phase);
  std::shared_ptr<Layer<float>> probe = LayerRegistry<float>::CreateLayer(layer);
  std::vector<Blob<float>> tops(layer.top_size());
  std::vector<Blob<float>*> top_pointers;
  for (auto& top : tops) top_pointers.push_back(&top);
  probe->SetUp({}, top_pointers);
  std::vector<std::vector<int>> shapes;
  for (const auto& top : tops) shapes.push_back(top.shape());
  return shapes;
}

std::string ShapeText(const std::vector<int>& shape) {
  std::string text;
  for (int d : shape) text += (text.empty() ? "" : "x") + std::to_string(d);
  return text;
}

// The shape of every top of a data layer at batch n (WithSyntheticInputs' order) and, in
// `from`, where it came from for the log; empty for a layer outside the net's state whose
// shape cannot be told without its source.
std::vector<std::vector<int>> TopShapes(const LayerParameter& layer, bool in_state, Phase phase,
                                        int n, const std::vector<int>& image_shape,
                                        std::string* from) {
  const std::string who = DescribeLayer(layer);
  // Images first, then scalar labels.
  auto images = [&](std::vector<int> image) {
    std::vector<std::vector<int>> shapes(layer.top_size(), {n});
    if (!shapes.empty()) shapes[0].insert(shapes[0].end(), image.begin(), image.end());
    return shapes;
  };
  if (!image_shape.empty()) {
    *from = "--input_shape";
    return images(image_shape);
  }
  if (layer.type() == "MemoryData") {
    const MemoryDataParameter& memory = layer.memory_data_param();
    *from = "memory_data_param";
    return images({static_cast<int>(memory.channels()), static_cast<int>(memory.height()),
                   static_cast<int>(memory.width())});
  }
  const Source source = SourceOf(layer);
  std::string unread = source.field.empty() ? "it has no source" : source.field + " is not set";
  if (!in_state) unread = "it is not part of the net's state";
  if (in_state && !source.path.empty()) {
    try {
      std::vector<std::vector<int>> shapes = TopShapesFromSource(layer, phase);
      for (auto& shape : shapes) {
        if (!shape.empty()) shape[0] = n;
      }
      *from = source.first + " '" + source.path + "'";
      return shapes;
    } catch (const Error& error) {
      // The layer's own message starts with the name this one gives first.
      std::string reason = error.what();
      if (reason.rfind(who + ": ", 0) == 0) reason.erase(0, who.size() + 2);
      unread = "its source '" + source.path + "' (" + source.field + ") cannot be read: " + reason;
    }
  }
  const int crop = static_cast<int>(layer.transform_param().crop_size());
  if (crop <= 0 && !in_state) return {};
  DOPPIO_ENSURE(crop > 0) << who << ": cannot tell the image size it produces: " << unread
                          << "; give --input_shape=C,H,W";
  *from = "transform_param.crop_size with 3 channels, since " + unread;
  return images({3, crop, crop});
}

}  // namespace

NetParameter WithSyntheticInputs(const NetParameter& param, int batch,
                                 const std::vector<int>& image_shape) {
  NetParameter result = param;
  const Phase phase = param.state().phase();
  for (auto& layer : *result.mutable_layer()) {
    if (LayerTypeTraits(layer.type()).reads_data) {
      const bool in_state = InState(param.state(), layer);
      std::string from;
      const std::vector<std::vector<int>> shapes =
          TopShapes(layer, in_state, phase, BatchSize(layer, batch), image_shape, &from);
      if (shapes.empty()) continue;
      LayerParameter dummy;
      dummy.set_name(layer.name());
      dummy.set_type("DummyData");
      *dummy.mutable_top() = layer.top();
      *dummy.mutable_include() = layer.include();
      *dummy.mutable_exclude() = layer.exclude();
      std::ostringstream line;
      line << DescribeLayer(layer) << ": synthetic tops";
      for (std::size_t t = 0; t < shapes.size(); ++t) {
        BlobShape* shape = dummy.mutable_dummy_data_param()->add_shape();
        for (int d : shapes[t]) shape->add_dim(d);
        line << (t == 0 ? " " : ", ") << ShapeText(shapes[t]);
        // Constant fillers fill once at set-up, so Forward costs nothing; labels are class 0.
        FillerParameter* filler = dummy.mutable_dummy_data_param()->add_data_filler();
        filler->set_type("constant");
        filler->set_value(t == 0 ? 0.5f : 0.f);
      }
      if (in_state) LOG(INFO) << line.str() << ", shaped from " << from;
      layer = dummy;
    } else if (layer.type() == "Input" && batch > 0) {
      for (auto& shape : *layer.mutable_input_param()->mutable_shape()) {
        if (shape.dim_size() > 0) shape.set_dim(0, batch);
      }
    }
  }
  return result;
}

}  // namespace doppio
