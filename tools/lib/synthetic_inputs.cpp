#include "synthetic_inputs.hpp"

#include <string>

#include "doppio/core/layer_registry.hpp"

namespace doppio {

namespace {

int BatchSize(const LayerParameter& layer, int batch) {
  if (batch > 0) return batch;
  // The other data layers may carry a data_param too (prefetch, HDF5Data's shard): their own
  // block comes first.
  if (layer.has_image_data_param()) return layer.image_data_param().batch_size();
  if (layer.has_hdf5_data_param()) return layer.hdf5_data_param().batch_size();
  if (layer.has_memory_data_param()) return layer.memory_data_param().batch_size();
  if (layer.has_window_data_param()) return layer.window_data_param().batch_size();
  if (layer.has_data_param()) return layer.data_param().batch_size();
  return 1;
}

std::vector<int> ImageShape(const LayerParameter& layer, const std::vector<int>& image_shape) {
  if (!image_shape.empty()) return image_shape;
  if (layer.has_memory_data_param()) {
    const MemoryDataParameter& memory = layer.memory_data_param();
    return {static_cast<int>(memory.channels()), static_cast<int>(memory.height()),
            static_cast<int>(memory.width())};
  }
  const int crop = layer.transform_param().crop_size();
  DOPPIO_ENSURE(crop > 0) << "layer '" << layer.name() << "' (" << layer.type()
                          << "): cannot tell the image size it produces; give C,H,W";
  return {3, crop, crop};
}

}  // namespace

NetParameter WithSyntheticInputs(const NetParameter& param, int batch,
                                 const std::vector<int>& image_shape) {
  NetParameter result = param;
  for (auto& layer : *result.mutable_layer()) {
    if (LayerTypeTraits(layer.type()).reads_data) {
      const int n = BatchSize(layer, batch);
      const std::vector<int> image = ImageShape(layer, image_shape);
      LayerParameter dummy;
      dummy.set_name(layer.name());
      dummy.set_type("DummyData");
      *dummy.mutable_top() = layer.top();
      *dummy.mutable_include() = layer.include();
      *dummy.mutable_exclude() = layer.exclude();
      for (int t = 0; t < layer.top_size(); ++t) {
        BlobShape* shape = dummy.mutable_dummy_data_param()->add_shape();
        shape->add_dim(n);
        if (t == 0) {
          for (int d : image) shape->add_dim(d);
        }
        // Constant fillers fill once at set-up, so Forward costs nothing; labels are class 0.
        FillerParameter* filler = dummy.mutable_dummy_data_param()->add_data_filler();
        filler->set_type("constant");
        filler->set_value(t == 0 ? 0.5f : 0.f);
      }
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
