#include "doppio/core/layer_registry.hpp"

#include <glog/logging.h>

namespace doppio {

namespace {
// The engine a layer's parameters ask for: DEFAULT (0), CAFFE (1), CUDNN (2) or ONEDNN (3), read by
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
std::map<std::string, typename LayerRegistry<Dtype>::TypeEntry>& LayerRegistry<Dtype>::Table() {
  static std::map<std::string, TypeEntry> table;
  return table;
}

template <typename Dtype>
void LayerRegistry<Dtype>::AddCreator(const std::string& type, const std::string& engine,
                                      Creator creator, Unsupported unsupported,
                                      NotPreferred not_preferred) {
  auto& engines = Table()[type].engines;
  CHECK(engines.count(engine) == 0)
      << "layer type " << type << " registered twice for engine " << engine;
  engines[engine] = Entry{std::move(creator), std::move(unsupported), std::move(not_preferred)};
}

template <typename Dtype>
void LayerRegistry<Dtype>::AddTraits(const std::string& type, LayerTraits traits) {
  TypeEntry& entry = Table()[type];
  CHECK(!entry.has_traits) << "layer type " << type << " registered its traits twice";
  CHECK_EQ(traits.unsupported.empty(), entry.engines.count("CAFFE") > 0)
      << "layer type " << type << ": a type registers its traits with its CAFFE engine, or "
      << "alone with the reason it is unsupported";
  entry.traits = std::move(traits);
  entry.has_traits = true;
}

const LayerTraits& LayerTypeTraits(const std::string& type) {
  static const LayerTraits computes_only;
  const auto& table = LayerRegistry<float>::Table();
  const auto it = table.find(type);
  return it == table.end() ? computes_only : it->second.traits;
}

template <typename Dtype>
std::vector<std::string> LayerRegistry<Dtype>::Types() {
  std::vector<std::string> types;
  for (const auto& entry : Table()) {
    if (entry.second.traits.unsupported.empty()) types.push_back(entry.first);
  }
  return types;
}

template <typename Dtype>
std::string LayerRegistry<Dtype>::ChooseEngine(const LayerParameter& param, Mode mode) {
  auto it = Table().find(param.type());
  if (it == Table().end()) {
    std::ostringstream known;
    for (const auto& type : Types()) known << " " << type;
    DOPPIO_FAIL() << "layer '" << param.name() << "' has unknown type '" << param.type()
                  << "'; known types:" << known.str();
  }
  DOPPIO_ENSURE(it->second.traits.unsupported.empty())
      << DescribeLayer(param) << ": " << it->second.traits.unsupported;
  const auto& engines = it->second.engines;
  const std::string requested = RequestedEngine(param);
  const auto reason = [&param](const Entry& entry) {
    return entry.unsupported ? entry.unsupported(param) : std::string();
  };
  // What DEFAULT may pick: an engine that can run the configuration and prefers it.
  const auto usable = [&](const char* engine) {
    const auto entry = engines.find(engine);
    if (entry == engines.end() || !reason(entry->second).empty()) return false;
    const std::string elsewhere =
        entry->second.not_preferred ? entry->second.not_preferred(param) : std::string();
    VLOG_IF(1, !elsewhere.empty())
        << DescribeLayer(param) << ": DEFAULT leaves engine " << engine << ": " << elsewhere;
    return elsewhere.empty();
  };
  if (requested == "DEFAULT") {
    // The library's kernels take over where they registered and can run the configuration:
    // cuDNN on the GPU, oneDNN on the CPU (a build without oneDNN registers none, and its
    // double layers refuse). A shape that only Reshape sees and whose Caffe results oneDNN
    // cannot give (average pooling whose windows overhang the padding) runs CAFFE's kernels
    // inside the ONEDNN layer, which logs it.
    if (mode == Mode::GPU) return usable("CUDNN") ? "CUDNN" : "CAFFE";
    return usable("ONEDNN") ? "ONEDNN" : "CAFFE";
  }
  if (requested == "CUDNN" && mode == Mode::CPU) {
    VLOG(1) << "layer '" << param.name() << "' asks for engine CUDNN; on the CPU it runs "
            << "Doppio's own kernels";
    return "CAFFE";
  }
  auto entry = engines.find(requested);
  if (entry == engines.end() && requested == "ONEDNN") {
#ifdef DOPPIO_WITH_ONEDNN
    DOPPIO_FAIL() << DescribeLayer(param) << " asks for engine ONEDNN, which has no "
                  << param.type() << " layer";
#else
    DOPPIO_FAIL() << DescribeLayer(param)
                  << " asks for engine ONEDNN, but this build has no oneDNN (install "
                  << "libdnnl-dev and configure with -DDOPPIO_ONEDNN=AUTO or ON)";
#endif
  }
  DOPPIO_ENSURE(entry != engines.end()) << DescribeLayer(param) << " asks for engine " << requested
                                        << ", which this build does not provide";
  if (requested == "ONEDNN" && mode == Mode::GPU) {
    VLOG(1) << "layer '" << param.name() << "' asks for engine ONEDNN; on the GPU it runs "
            << "Doppio's own kernels";
    return "CAFFE";
  }
  const std::string why = reason(entry->second);
  DOPPIO_ENSURE(why.empty()) << DescribeLayer(param) << " asks for engine " << requested
                             << ", which cannot run it: " << why;
  return requested;
}

template <typename Dtype>
std::shared_ptr<Layer<Dtype>> LayerRegistry<Dtype>::CreateLayer(const LayerParameter& param,
                                                                Mode mode) {
  const std::string engine = ChooseEngine(param, mode);
  const auto& engines = Table().find(param.type())->second.engines;
  auto entry = engines.find(engine);
  DOPPIO_ENSURE(entry != engines.end())
      << DescribeLayer(param) << ": engine " << engine << " is not registered for this type";
  std::shared_ptr<Layer<Dtype>> layer = entry->second.creator(param);
  layer->set_engine(engine);
  return layer;
}

DOPPIO_INSTANTIATE_CLASS(LayerRegistry);

}  // namespace doppio
