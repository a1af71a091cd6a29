#include "engine_override.hpp"

#include <algorithm>
#include <cctype>

#include "doppio/core/layer_registry.hpp"

namespace doppio {

namespace {
// "inner_product_param" and "InnerProduct" both become "innerproduct".
std::string Key(const std::string& name) {
  std::string key;
  for (char c : name) {
    if (c != '_') key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return key;
}
}  // namespace

NetParameter WithEngine(const NetParameter& param, const std::string& engine) {
  NetParameter out = param;
  bool known = false;
  const auto* descriptor = LayerParameter::descriptor();
  for (LayerParameter& layer : *out.mutable_layer()) {
    for (int i = 0; i < descriptor->field_count(); ++i) {
      const auto* field = descriptor->field(i);
      const std::string suffix = "_param";
      if (field->type() != google::protobuf::FieldDescriptor::TYPE_MESSAGE ||
          field->name().size() <= suffix.size() ||
          Key(field->name().substr(0, field->name().size() - suffix.size())) != Key(layer.type())) {
        continue;
      }
      const auto* engine_field = field->message_type()->FindFieldByName("engine");
      if (engine_field == nullptr) continue;
      const auto* value = engine_field->enum_type()->FindValueByName(engine);
      if (value == nullptr) continue;
      known = true;
      LayerParameter candidate = layer;
      auto* sub = candidate.GetReflection()->MutableMessage(&candidate, field);
      sub->GetReflection()->SetEnum(sub, engine_field, value);
      try {
        LayerRegistry<float>::ChooseEngine(candidate, Mode::CPU);
      } catch (const Error&) {
        continue;  // the engine cannot run this layer: it keeps its own
      }
      layer = candidate;
    }
  }
  DOPPIO_ENSURE(known || out.layer_size() == 0)
      << "--engine=" << engine << ": no layer of net '" << param.name()
      << "' has an engine of that name (engines: CAFFE, CUDNN, ONEDNN)";
  return out;
}

}  // namespace doppio
