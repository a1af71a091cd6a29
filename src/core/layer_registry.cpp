#include "doppio/core/layer_registry.hpp"

#include <glog/logging.h>

namespace doppio {

namespace {
// The engine a layer's parameters ask for: DEFAULT (0), CAFFE (1) or CUDNN (2), read by
// reflection from whichever *_param message of the layer has an "engine" field set.
std::string RequestedEngine(const LayerParameter& param) {
  const auto* reflection = param.GetReflection();
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  reflection->ListFields(param, &fields);
  for (const auto* field : fields) {
    if (field->type() != google::protobuf::FieldDescriptor::TYPE_MESSAGE || field->is_repeated())
      continue;
    const auto& sub = reflection->GetMessage(param, field);
    const auto* engine = sub.GetDescriptor()->FindFieldByName("engine");
    if (engine == nullptr || !sub.GetReflection()->HasField(sub, engine)) continue;
    return sub.GetReflection()->GetEnum(sub, engine)->name();
  }
  return "DEFAULT";
}
}  // namespace

template <typename Dtype>
std::map<std::string, std::map<std::string, typename LayerRegistry<Dtype>::Creator>>&
LayerRegistry<Dtype>::Table() {
  static std::map<std::string, std::map<std::string, Creator>> table;
  return table;
}

template <typename Dtype>
void LayerRegistry<Dtype>::AddCreator(const std::string& type, const std::string& engine,
                                      Creator creator) {
  auto& engines = Table()[type];
  CHECK(engines.count(engine) == 0)
      << "layer type " << type << " registered twice for engine " << engine;
  engines[engine] = std::move(creator);
}

template <typename Dtype>
bool LayerRegistry<Dtype>::Has(const std::string& type) {
  return Table().count(type) > 0;
}

template <typename Dtype>
std::vector<std::string> LayerRegistry<Dtype>::Types() {
  std::vector<std::string> types;
  for (const auto& entry : Table()) types.push_back(entry.first);
  return types;
}

template <typename Dtype>
std::shared_ptr<Layer<Dtype>> LayerRegistry<Dtype>::CreateLayer(const LayerParameter& param) {
  auto it = Table().find(param.type());
  if (it == Table().end()) {
    std::ostringstream known;
    for (const auto& type : Types()) known << " " << type;
    DOPPIO_FAIL() << "layer '" << param.name() << "' has unknown type '" << param.type()
                  << "'; known types:" << known.str();
  }
  const auto& engines = it->second;
  std::string engine = RequestedEngine(param);
  if (engine == "DEFAULT") {
    // cuDNN takes over where it registered; otherwise Doppio's own kernels.
    engine = engines.count("CUDNN") ? "CUDNN" : "CAFFE";
  }
  auto creator = engines.find(engine);
  DOPPIO_ENSURE(creator != engines.end())
      << "layer '" << param.name() << "' (" << param.type() << ") asks for engine " << engine
      << ", which this build does not provide";
  return creator->second(param);
}

DOPPIO_INSTANTIATE_CLASS(LayerRegistry);

}  // namespace doppio
