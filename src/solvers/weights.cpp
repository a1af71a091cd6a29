#include "doppio/solvers/weights.hpp"

#include <glog/logging.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "doppio/util/snapshot_files.hpp"

namespace doppio {

namespace {

using BlobShapes = std::vector<std::vector<int>>;

// Layer name -> the shapes of the blobs of each layer of that name, in file order.
std::map<std::string, std::vector<BlobShapes>> LayerBlobShapes(const NetParameter& param) {
  std::map<std::string, std::vector<BlobShapes>> shapes;
  const auto add = [&shapes](const std::string& name,
                             const google::protobuf::RepeatedPtrField<BlobProto>& blobs) {
    BlobShapes& entry = shapes[name].emplace_back();
    for (const auto& blob : blobs) entry.push_back(BlobProtoShape(blob));
  };
  for (const auto& layer : param.layer()) add(layer.name(), layer.blobs());
  return shapes;
}

int CountWithWeights(const std::vector<BlobShapes>& layers) {
  return static_cast<int>(std::count_if(layers.begin(), layers.end(),
                                        [](const BlobShapes& blobs) { return !blobs.empty(); }));
}

std::vector<std::string> SplitFiles(const std::string& files) {
  std::vector<std::string> parts;
  std::string current;
  for (char c : files) {
    if (c == ',') {
      if (!current.empty()) parts.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty()) parts.push_back(current);
  return parts;
}

}  // namespace

template <typename Dtype>
void LoadNetWeights(Net<Dtype>* net, const std::string& files) {
  for (const std::string& file : SplitFiles(files)) {
    NetParameter weights;
    ReadWeightsFile(file, &weights);
    DOPPIO_ENSURE(weights.layer_size() > 0)
        << file << ": not a .caffemodel: it holds no layers with weights (a binary NetParameter, "
        << "or Caffe's HDF5 weights in a file ending in .h5, was expected)";
    // Copying by name skips unknown layers silently; a file sharing no layer with the net
    // is almost always the wrong file (or not a .caffemodel at all).
    const auto shapes = LayerBlobShapes(weights);
    int matched = 0;
    int with_params = 0;
    std::set<std::string> seen;
    for (std::size_t i = 0; i < net->layers().size(); ++i) {
      Layer<Dtype>& layer = *net->layers()[i];
      const bool first_of_name = seen.insert(layer.name()).second;
      if (layer.blobs().empty()) continue;
      ++with_params;
      auto it = shapes.find(layer.name());
      const int in_file = it == shapes.end() ? 0 : CountWithWeights(it->second);
      if (in_file == 0) continue;
      if (first_of_name) {
        ++matched;
        if (in_file > 1) {
          LOG(WARNING) << file << " holds " << in_file << " layers named '" << layer.name()
                       << "' with weights; as in Caffe, each is copied in turn into layer #" << i
                       << " (" << layer.type() << "), the first of that name, and the last stays";
        }
      } else {
        LOG(WARNING) << "Layer #" << i << " '" << layer.name() << "' (" << layer.type()
                     << ") of net '" << net->name() << "' keeps its initial weights: as in "
                     << "Caffe, the weights for '" << layer.name() << "' in " << file
                     << " go to the first layer of that name";
      }
    }
    DOPPIO_ENSURE(with_params == 0 || matched > 0)
        << file << ": none of its " << weights.layer_size()
        << " layers matches a layer with weights in net '" << net->name()
        << "' by name; is it a .caffemodel for this net?";
    net->CopyTrainedLayersFrom(weights);
    LOG(INFO) << "Copied weights of " << matched << " of " << with_params << " layers of net '"
              << net->name() << "' from " << file;
  }
}

template <typename Dtype>
void CheckWeightsMatchNet(const Net<Dtype>& net, const NetParameter& weights,
                          const std::string& origin) {
  const auto shapes = LayerBlobShapes(weights);
  // Both nets by name: a requeued job whose snapshot_prefix holds another net's snapshots
  // must see which two met.
  std::string different = " is from a different net than '" + net.name() + "'";
  if (weights.name() == net.name()) {
    different += ", of the same name";
  } else if (!weights.name().empty()) {
    different = " is from a different net: net '" + weights.name() + "', not '" + net.name() + "'";
  }
  // For each name, whether each layer of that name, in order, has parameters.
  std::map<std::string, std::vector<bool>> net_layers;
  for (std::size_t i = 0; i < net.layers().size(); ++i) {
    Layer<Dtype>& layer = *net.layers()[i];
    const std::string label = net.layer_label(static_cast<int>(i));
    std::vector<bool>& same_name = net_layers[layer.name()];
    const std::size_t occurrence = same_name.size();
    same_name.push_back(!layer.blobs().empty());
    if (layer.blobs().empty()) continue;
    auto it = shapes.find(layer.name());
    DOPPIO_ENSURE(it != shapes.end() && occurrence < it->second.size())
        << origin << different << ": it has no layer '" << label << "', which net '" << net.name()
        << "' has";
    const BlobShapes& file_blobs = it->second[occurrence];
    const auto& blobs = layer.blobs();
    DOPPIO_ENSURE(file_blobs.size() == blobs.size())
        << origin << different << ": layer '" << label << "' has " << file_blobs.size()
        << " blobs there but " << blobs.size() << " in net '" << net.name() << "'";
    for (std::size_t k = 0; k < blobs.size(); ++k) {
      DOPPIO_ENSURE(file_blobs[k] == blobs[k]->shape())
          << origin << different << ": blob " << k << " of layer '" << label << "' has shape "
          << ShapeString(file_blobs[k]) << " there but " << blobs[k]->shape_string() << " in net '"
          << net.name() << "'";
    }
  }
  for (const auto& entry : shapes) {
    auto it = net_layers.find(entry.first);
    for (std::size_t k = 0; k < entry.second.size(); ++k) {
      if (entry.second[k].empty()) continue;
      DOPPIO_ENSURE(it != net_layers.end() && k < it->second.size() && it->second[k])
          << origin << different << ": it holds weights for " << (k == 0 ? "" : "another ")
          << "layer '" << entry.first << "', which net '" << net.name() << "' does not have";
    }
  }
}

template void LoadNetWeights<float>(Net<float>*, const std::string&);
template void LoadNetWeights<double>(Net<double>*, const std::string&);
template void CheckWeightsMatchNet<float>(const Net<float>&, const NetParameter&,
                                          const std::string&);
template void CheckWeightsMatchNet<double>(const Net<double>&, const NetParameter&,
                                           const std::string&);

}  // namespace doppio
