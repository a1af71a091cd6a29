#include "doppio/solvers/weights.hpp"

#include <glog/logging.h>

#include <map>
#include <vector>

#include "doppio/util/io.hpp"

namespace doppio {

namespace {

// Layer name -> the shapes of its blobs, for current and V1 layer entries alike.
std::map<std::string, std::vector<std::vector<int>>> LayerBlobShapes(const NetParameter& param) {
  std::map<std::string, std::vector<std::vector<int>>> shapes;
  for (const auto& layer : param.layer()) {
    auto& entry = shapes[layer.name()];
    for (const auto& blob : layer.blobs()) entry.push_back(BlobProtoShape(blob));
  }
  for (const auto& layer : param.layers()) {
    auto& entry = shapes[layer.name()];
    for (const auto& blob : layer.blobs()) entry.push_back(BlobProtoShape(blob));
  }
  return shapes;
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
    ReadProtoFromBinaryFile(file, &weights);
    DOPPIO_ENSURE(weights.layer_size() + weights.layers_size() > 0)
        << file << ": not a .caffemodel (a binary NetParameter holding layers was expected)";
    // Copying by name skips unknown layers silently; a file sharing no layer with the net
    // is almost always the wrong file (or not a .caffemodel at all).
    const auto shapes = LayerBlobShapes(weights);
    int matched = 0;
    int with_params = 0;
    for (const auto& layer : net->layers()) {
      if (layer->blobs().empty()) continue;
      ++with_params;
      auto it = shapes.find(layer->name());
      if (it != shapes.end() && !it->second.empty()) ++matched;
    }
    DOPPIO_ENSURE(with_params == 0 || matched > 0)
        << file << ": none of its " << shapes.size()
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
  std::map<std::string, bool> net_layers;
  for (const auto& layer : net.layers()) {
    net_layers[layer->name()] = !layer->blobs().empty();
    if (layer->blobs().empty()) continue;
    auto it = shapes.find(layer->name());
    DOPPIO_ENSURE(it != shapes.end()) << origin << " is from a different net: it has no layer '"
                                      << layer->name() << "', which net '" << net.name() << "' has";
    const auto& blobs = layer->blobs();
    DOPPIO_ENSURE(it->second.size() == blobs.size())
        << origin << " is from a different net: layer '" << layer->name() << "' has "
        << it->second.size() << " blobs there but " << blobs.size() << " in net '" << net.name()
        << "'";
    for (std::size_t k = 0; k < blobs.size(); ++k) {
      DOPPIO_ENSURE(it->second[k] == blobs[k]->shape())
          << origin << " is from a different net: blob " << k << " of layer '" << layer->name()
          << "' has shape " << ShapeString(it->second[k]) << " there but "
          << blobs[k]->shape_string() << " in net '" << net.name() << "'";
    }
  }
  for (const auto& entry : shapes) {
    if (entry.second.empty()) continue;
    auto it = net_layers.find(entry.first);
    DOPPIO_ENSURE(it != net_layers.end() && it->second)
        << origin << " is from a different net: it holds weights for layer '" << entry.first
        << "', which net '" << net.name() << "' does not have";
  }
}

template void LoadNetWeights<float>(Net<float>*, const std::string&);
template void LoadNetWeights<double>(Net<double>*, const std::string&);
template void CheckWeightsMatchNet<float>(const Net<float>&, const NetParameter&,
                                          const std::string&);
template void CheckWeightsMatchNet<double>(const Net<double>&, const NetParameter&,
                                           const std::string&);

}  // namespace doppio
