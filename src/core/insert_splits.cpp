#include "doppio/core/insert_splits.hpp"

#include <map>
#include <utility>

namespace doppio {

std::string SplitLayerName(const std::string& layer_name, const std::string& blob_name,
                           int blob_index) {
  return blob_name + "_" + layer_name + "_" + std::to_string(blob_index) + "_split";
}

std::string SplitBlobName(const std::string& layer_name, const std::string& blob_name,
                          int blob_index, int split_index) {
  return SplitLayerName(layer_name, blob_name, blob_index) + "_" + std::to_string(split_index);
}

NetParameter InsertSplits(const NetParameter& param) {
  using Producer = std::pair<int, int>;  // (layer, top index)
  std::map<std::string, Producer> last_producer;
  std::map<Producer, int> consumer_count;
  std::map<Producer, float> loss_weight;
  // Which producer feeds each (layer, bottom index).
  std::map<Producer, Producer> bottom_source;

  for (int i = 0; i < param.layer_size(); ++i) {
    const LayerParameter& layer = param.layer(i);
    for (int j = 0; j < layer.bottom_size(); ++j) {
      auto it = last_producer.find(layer.bottom(j));
      if (it == last_producer.end()) continue;  // Net reports the missing producer.
      bottom_source[{i, j}] = it->second;
      ++consumer_count[it->second];
    }
    for (int j = 0; j < layer.top_size(); ++j) {
      last_producer[layer.top(j)] = {i, j};
      if (j < layer.loss_weight_size()) loss_weight[{i, j}] = layer.loss_weight(j);
    }
  }

  NetParameter result = param;
  result.clear_layer();
  std::map<Producer, int> split_taken;
  for (int i = 0; i < param.layer_size(); ++i) {
    LayerParameter* layer = result.add_layer();
    *layer = param.layer(i);
    // Rename bottoms that read a split blob.
    for (int j = 0; j < layer->bottom_size(); ++j) {
      auto source = bottom_source.find({i, j});
      if (source == bottom_source.end()) continue;
      const Producer producer = source->second;
      if (consumer_count[producer] + (loss_weight[producer] != 0 ? 1 : 0) <= 1) continue;
      const std::string& producer_name = param.layer(producer.first).name();
      layer->set_bottom(j, SplitBlobName(producer_name, layer->bottom(j), producer.second,
                                         split_taken[producer]++));
    }
    // A Split after every top with more than one reader.
    for (int j = 0; j < layer->top_size(); ++j) {
      const Producer producer{i, j};
      const float weight = loss_weight.count(producer) ? loss_weight[producer] : 0.f;
      const int readers = consumer_count[producer] + (weight != 0 ? 1 : 0);
      if (readers <= 1) continue;
      const std::string& blob = layer->top(j);
      LayerParameter* split = result.add_layer();
      split->set_name(SplitLayerName(layer->name(), blob, j));
      split->set_type("Split");
      split->add_bottom(blob);
      for (int k = 0; k < readers; ++k) {
        split->add_top(SplitBlobName(layer->name(), blob, j, k));
        // The loss stays on the first split output so it is counted once.
        if (weight != 0) split->add_loss_weight(k == 0 ? weight : 0.f);
      }
      if (weight != 0) {
        // The split now carries the loss; output 0 is reserved for it.
        layer->set_loss_weight(j, 0.f);
        split_taken[producer] = 1;
      }
    }
  }
  return result;
}

}  // namespace doppio
