#include "doppio/util/upgrade_net.hpp"

#include <glog/logging.h>

#include <algorithm>
#include <initializer_list>
#include <map>
#include <set>
#include <vector>

#include "doppio/util/error.hpp"

namespace doppio {

namespace {

using V1Type = V1LayerParameter::LayerType;

const std::map<std::string, V1Type>& V0Types() {
  static const std::map<std::string, V1Type> types = {
      {"accuracy", V1LayerParameter::ACCURACY},
      {"bnll", V1LayerParameter::BNLL},
      {"concat", V1LayerParameter::CONCAT},
      {"conv", V1LayerParameter::CONVOLUTION},
      {"data", V1LayerParameter::DATA},
      {"dropout", V1LayerParameter::DROPOUT},
      {"euclidean_loss", V1LayerParameter::EUCLIDEAN_LOSS},
      {"flatten", V1LayerParameter::FLATTEN},
      {"hdf5_data", V1LayerParameter::HDF5_DATA},
      {"hdf5_output", V1LayerParameter::HDF5_OUTPUT},
      {"im2col", V1LayerParameter::IM2COL},
      {"images", V1LayerParameter::IMAGE_DATA},
      {"infogain_loss", V1LayerParameter::INFOGAIN_LOSS},
      {"innerproduct", V1LayerParameter::INNER_PRODUCT},
      {"lrn", V1LayerParameter::LRN},
      {"multinomial_logistic_loss", V1LayerParameter::MULTINOMIAL_LOGISTIC_LOSS},
      {"pool", V1LayerParameter::POOLING},
      {"relu", V1LayerParameter::RELU},
      {"sigmoid", V1LayerParameter::SIGMOID},
      {"softmax", V1LayerParameter::SOFTMAX},
      {"softmax_loss", V1LayerParameter::SOFTMAX_LOSS},
      {"split", V1LayerParameter::SPLIT},
      {"tanh", V1LayerParameter::TANH},
      {"window_data", V1LayerParameter::WINDOW_DATA},
  };
  return types;
}

const std::map<V1Type, std::string>& V1TypeNames() {
  static const std::map<V1Type, std::string> names = {
      {V1LayerParameter::ABSVAL, "AbsVal"},
      {V1LayerParameter::ACCURACY, "Accuracy"},
      {V1LayerParameter::ARGMAX, "ArgMax"},
      {V1LayerParameter::BNLL, "BNLL"},
      {V1LayerParameter::CONCAT, "Concat"},
      {V1LayerParameter::CONTRASTIVE_LOSS, "ContrastiveLoss"},
      {V1LayerParameter::CONVOLUTION, "Convolution"},
      {V1LayerParameter::DATA, "Data"},
      {V1LayerParameter::DECONVOLUTION, "Deconvolution"},
      {V1LayerParameter::DROPOUT, "Dropout"},
      {V1LayerParameter::DUMMY_DATA, "DummyData"},
      {V1LayerParameter::EUCLIDEAN_LOSS, "EuclideanLoss"},
      {V1LayerParameter::ELTWISE, "Eltwise"},
      {V1LayerParameter::EXP, "Exp"},
      {V1LayerParameter::FLATTEN, "Flatten"},
      {V1LayerParameter::HDF5_DATA, "HDF5Data"},
      {V1LayerParameter::HDF5_OUTPUT, "HDF5Output"},
      {V1LayerParameter::HINGE_LOSS, "HingeLoss"},
      {V1LayerParameter::IM2COL, "Im2col"},
      {V1LayerParameter::IMAGE_DATA, "ImageData"},
      {V1LayerParameter::INFOGAIN_LOSS, "InfogainLoss"},
      {V1LayerParameter::INNER_PRODUCT, "InnerProduct"},
      {V1LayerParameter::LRN, "LRN"},
      {V1LayerParameter::MEMORY_DATA, "MemoryData"},
      {V1LayerParameter::MULTINOMIAL_LOGISTIC_LOSS, "MultinomialLogisticLoss"},
      {V1LayerParameter::MVN, "MVN"},
      {V1LayerParameter::POOLING, "Pooling"},
      {V1LayerParameter::POWER, "Power"},
      {V1LayerParameter::RELU, "ReLU"},
      {V1LayerParameter::SIGMOID, "Sigmoid"},
      {V1LayerParameter::SIGMOID_CROSS_ENTROPY_LOSS, "SigmoidCrossEntropyLoss"},
      {V1LayerParameter::SILENCE, "Silence"},
      {V1LayerParameter::SOFTMAX, "Softmax"},
      {V1LayerParameter::SOFTMAX_LOSS, "SoftmaxWithLoss"},
      {V1LayerParameter::SPLIT, "Split"},
      {V1LayerParameter::SLICE, "Slice"},
      {V1LayerParameter::TANH, "TanH"},
      {V1LayerParameter::WINDOW_DATA, "WindowData"},
      {V1LayerParameter::THRESHOLD, "Threshold"},
  };
  return names;
}

std::string LayerLabel(const std::string& origin, const std::string& name) {
  return origin + ", layer '" + name + "'";
}

// Moves one data parameter block's deprecated transformation fields into transform_param.
template <typename Block>
void MoveTransformFields(const std::string& who, const char* block_name, Block* block,
                         TransformationParameter* transform) {
  const auto conflict = [&](const char* field) {
    return Error(who + ": " + block_name + "." + field + " (deprecated) and transform_param." +
                 field + " disagree; set it in transform_param only");
  };
  if (block->has_scale()) {
    if (transform->has_scale() && transform->scale() != block->scale()) throw conflict("scale");
    transform->set_scale(block->scale());
    block->clear_scale();
  }
  if (block->has_mean_file()) {
    if (transform->has_mean_file() && transform->mean_file() != block->mean_file())
      throw conflict("mean_file");
    transform->set_mean_file(block->mean_file());
    block->clear_mean_file();
  }
  if (block->has_crop_size()) {
    if (transform->has_crop_size() && transform->crop_size() != block->crop_size())
      throw conflict("crop_size");
    transform->set_crop_size(block->crop_size());
    block->clear_crop_size();
  }
  if (block->has_mirror()) {
    if (transform->has_mirror() && transform->mirror() != block->mirror()) throw conflict("mirror");
    transform->set_mirror(block->mirror());
    block->clear_mirror();
  }
}

// Moves the V0 layer inside `layer` into V1's fields. Every V0 field that is set must mean
// something to the layer's type: a silently dropped field would change the net.
void UpgradeV0Layer(const std::string& origin, V1LayerParameter* layer) {
  V0LayerParameter v0;
  v0.Swap(layer->mutable_layer());
  layer->clear_layer();
  const std::string where = LayerLabel(origin, v0.name());
  const auto type = V0Types().find(v0.type());
  DOPPIO_ENSURE(type != V0Types().end())
      << where << ": V0 layer type '" << v0.type() << "' has no counterpart in Caffe's upgrade";
  layer->set_name(v0.name());
  layer->set_type(type->second);
  layer->mutable_blobs()->Swap(v0.mutable_blobs());
  *layer->mutable_blobs_lr() = v0.blobs_lr();
  *layer->mutable_weight_decay() = v0.weight_decay();

  // V0 kept the data preprocessing in flat fields; Caffe's upgrade moves them into
  // transform_param whatever the layer's type, so they are taken from every layer here too.
  std::set<std::string> used = {"name",  "type",     "blobs_lr", "weight_decay",
                                "scale", "meanfile", "cropsize", "mirror"};
  if (v0.has_scale()) layer->mutable_transform_param()->set_scale(v0.scale());
  if (v0.has_meanfile()) layer->mutable_transform_param()->set_mean_file(v0.meanfile());
  if (v0.has_cropsize()) layer->mutable_transform_param()->set_crop_size(v0.cropsize());
  if (v0.has_mirror()) layer->mutable_transform_param()->set_mirror(v0.mirror());
  const auto use = [&used](std::initializer_list<const char*> fields) {
    used.insert(fields.begin(), fields.end());
  };
  switch (type->second) {
    case V1LayerParameter::CONVOLUTION: {
      use({"num_output", "biasterm", "weight_filler", "bias_filler", "pad", "kernelsize", "group",
           "stride"});
      ConvolutionParameter* p = layer->mutable_convolution_param();
      if (v0.has_num_output()) p->set_num_output(v0.num_output());
      if (v0.has_biasterm()) p->set_bias_term(v0.biasterm());
      if (v0.has_weight_filler()) *p->mutable_weight_filler() = v0.weight_filler();
      if (v0.has_bias_filler()) *p->mutable_bias_filler() = v0.bias_filler();
      if (v0.has_pad()) p->add_pad(v0.pad());
      if (v0.has_kernelsize()) p->add_kernel_size(v0.kernelsize());
      if (v0.has_group()) p->set_group(v0.group());
      if (v0.has_stride()) p->add_stride(v0.stride());
      break;
    }
    case V1LayerParameter::INNER_PRODUCT: {
      use({"num_output", "biasterm", "weight_filler", "bias_filler"});
      InnerProductParameter* p = layer->mutable_inner_product_param();
      if (v0.has_num_output()) p->set_num_output(v0.num_output());
      if (v0.has_biasterm()) p->set_bias_term(v0.biasterm());
      if (v0.has_weight_filler()) *p->mutable_weight_filler() = v0.weight_filler();
      if (v0.has_bias_filler()) *p->mutable_bias_filler() = v0.bias_filler();
      break;
    }
    case V1LayerParameter::POOLING: {
      use({"pool", "kernelsize", "stride", "pad"});
      PoolingParameter* p = layer->mutable_pooling_param();
      if (v0.has_pool()) p->set_pool(static_cast<PoolingParameter::PoolMethod>(v0.pool()));
      if (v0.has_kernelsize()) p->set_kernel_size(v0.kernelsize());
      if (v0.has_stride()) p->set_stride(v0.stride());
      if (v0.has_pad()) p->set_pad(v0.pad());
      break;
    }
    case V1LayerParameter::DROPOUT:
      use({"dropout_ratio"});
      if (v0.has_dropout_ratio())
        layer->mutable_dropout_param()->set_dropout_ratio(v0.dropout_ratio());
      break;
    case V1LayerParameter::LRN: {
      use({"local_size", "alpha", "beta", "k"});
      LRNParameter* p = layer->mutable_lrn_param();
      if (v0.has_local_size()) p->set_local_size(v0.local_size());
      if (v0.has_alpha()) p->set_alpha(v0.alpha());
      if (v0.has_beta()) p->set_beta(v0.beta());
      if (v0.has_k()) p->set_k(v0.k());
      break;
    }
    case V1LayerParameter::DATA: {
      use({"source", "batchsize", "rand_skip"});
      DataParameter* p = layer->mutable_data_param();
      if (v0.has_source()) p->set_source(v0.source());
      if (v0.has_batchsize()) p->set_batch_size(v0.batchsize());
      if (v0.has_rand_skip()) p->set_rand_skip(v0.rand_skip());
      break;
    }
    case V1LayerParameter::IMAGE_DATA: {
      use({"source", "batchsize", "rand_skip", "shuffle_images", "new_height", "new_width"});
      ImageDataParameter* p = layer->mutable_image_data_param();
      if (v0.has_source()) p->set_source(v0.source());
      if (v0.has_batchsize()) p->set_batch_size(v0.batchsize());
      if (v0.has_rand_skip()) p->set_rand_skip(v0.rand_skip());
      if (v0.has_shuffle_images()) p->set_shuffle(v0.shuffle_images());
      if (v0.has_new_height()) p->set_new_height(v0.new_height());
      if (v0.has_new_width()) p->set_new_width(v0.new_width());
      break;
    }
    case V1LayerParameter::WINDOW_DATA: {
      use({"source", "batchsize", "det_fg_threshold", "det_bg_threshold", "det_fg_fraction",
           "det_context_pad", "det_crop_mode"});
      WindowDataParameter* p = layer->mutable_window_data_param();
      if (v0.has_source()) p->set_source(v0.source());
      if (v0.has_batchsize()) p->set_batch_size(v0.batchsize());
      if (v0.has_det_fg_threshold()) p->set_fg_threshold(v0.det_fg_threshold());
      if (v0.has_det_bg_threshold()) p->set_bg_threshold(v0.det_bg_threshold());
      if (v0.has_det_fg_fraction()) p->set_fg_fraction(v0.det_fg_fraction());
      if (v0.has_det_context_pad()) p->set_context_pad(v0.det_context_pad());
      if (v0.has_det_crop_mode()) p->set_crop_mode(v0.det_crop_mode());
      break;
    }
    case V1LayerParameter::HDF5_DATA: {
      use({"source", "batchsize"});
      HDF5DataParameter* p = layer->mutable_hdf5_data_param();
      if (v0.has_source()) p->set_source(v0.source());
      if (v0.has_batchsize()) p->set_batch_size(v0.batchsize());
      break;
    }
    case V1LayerParameter::INFOGAIN_LOSS:
      use({"source"});
      if (v0.has_source()) layer->mutable_infogain_loss_param()->set_source(v0.source());
      break;
    case V1LayerParameter::HDF5_OUTPUT:
      use({"hdf5_output_param"});
      if (v0.has_hdf5_output_param()) *layer->mutable_hdf5_output_param() = v0.hdf5_output_param();
      break;
    case V1LayerParameter::CONCAT:
      use({"concat_dim"});
      if (v0.has_concat_dim()) layer->mutable_concat_param()->set_concat_dim(v0.concat_dim());
      break;
    default:
      break;
  }
  const auto* reflection = v0.GetReflection();
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  reflection->ListFields(v0, &fields);
  for (const auto* field : fields) {
    DOPPIO_ENSURE(used.count(field->name()) > 0)
        << where << ": V0 field '" << field->name() << "' does not apply to a '" << v0.type()
        << "' layer";
  }
}

// V0 padded a convolution's or pooling's input with a separate "padding" layer; the pad
// moves into the layer it feeds, which then reads the padding layer's input.
std::vector<V1LayerParameter> FoldV0Padding(const std::string& origin,
                                            std::vector<V1LayerParameter> connections) {
  std::map<std::string, const V1LayerParameter*> padding_by_top;
  std::vector<V1LayerParameter> kept;
  for (V1LayerParameter& connection : connections) {
    const V0LayerParameter& v0 = connection.layer();
    if (v0.type() == "padding") {
      DOPPIO_ENSURE(connection.bottom_size() == 1 && connection.top_size() == 1)
          << LayerLabel(origin, v0.name()) << ": a V0 padding layer has one bottom and one top";
      padding_by_top[connection.top(0)] = &connection;
      continue;
    }
    V1LayerParameter layer = std::move(connection);
    for (int i = 0; i < layer.bottom_size(); ++i) {
      const auto padding = padding_by_top.find(layer.bottom(i));
      if (padding == padding_by_top.end()) continue;
      const V0LayerParameter& reader = layer.layer();
      DOPPIO_ENSURE(reader.type() == "conv" || reader.type() == "pool")
          << LayerLabel(origin, reader.name()) << ": reads the V0 padding layer '"
          << padding->second->layer().name() << "', which can only feed a conv or pool layer";
      layer.mutable_layer()->set_pad(padding->second->layer().pad());
      layer.set_bottom(i, padding->second->bottom(0));
    }
    kept.push_back(std::move(layer));
  }
  return kept;
}

LayerParameter UpgradeV1Layer(const std::string& origin, V1LayerParameter& v1) {
  const std::string where = LayerLabel(origin, v1.name());
  const auto type = V1TypeNames().find(v1.type());
  DOPPIO_ENSURE(type != V1TypeNames().end()) << where << ": has no type (V1 type NONE or unset)";
  LayerParameter layer;
  layer.set_name(v1.name());
  layer.set_type(type->second);
  *layer.mutable_bottom() = v1.bottom();
  *layer.mutable_top() = v1.top();
  *layer.mutable_include() = v1.include();
  *layer.mutable_exclude() = v1.exclude();
  layer.mutable_blobs()->Swap(v1.mutable_blobs());
  *layer.mutable_loss_weight() = v1.loss_weight();
  const int params = std::max(
      {v1.param_size(), v1.blob_share_mode_size(), v1.blobs_lr_size(), v1.weight_decay_size()});
  for (int i = 0; i < params; ++i) {
    ParamSpec* spec = layer.add_param();
    if (i < v1.param_size()) spec->set_name(v1.param(i));
    if (i < v1.blob_share_mode_size()) spec->set_share_mode(v1.blob_share_mode(i));
    if (i < v1.blobs_lr_size()) spec->set_lr_mult(v1.blobs_lr(i));
    if (i < v1.weight_decay_size()) spec->set_decay_mult(v1.weight_decay(i));
  }
  // Every *_param message has the same name and type in LayerParameter.
  const auto* from = v1.GetReflection();
  const auto* to = layer.GetReflection();
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  from->ListFields(v1, &fields);
  for (const auto* field : fields) {
    if (field->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE ||
        field->is_repeated() || field->name() == "layer") {
      continue;
    }
    const auto* target = layer.GetDescriptor()->FindFieldByName(field->name());
    DOPPIO_ENSURE(target != nullptr && target->message_type() == field->message_type())
        << where << ": V1 field '" << field->name() << "' has no counterpart in 'layer'";
    to->MutableMessage(&layer, target)->CopyFrom(from->GetMessage(v1, field));
  }
  if (v1.type() == V1LayerParameter::DATA || v1.type() == V1LayerParameter::IMAGE_DATA ||
      v1.type() == V1LayerParameter::WINDOW_DATA) {
    MoveDeprecatedTransformFields(where, &layer);
  }
  return layer;
}

// V0 or V1 'layers' blocks to 'layer' blocks.
void UpgradeLayers(const std::string& origin, NetParameter* net) {
  DOPPIO_ENSURE(net->layer_size() == 0)
      << origin << ": mixes 'layer' blocks with Caffe's old 'layers' blocks; write the net in "
      << "one format (`doppio upgrade_net` converts an old one)";
  const auto is_v0 = [](const V1LayerParameter& layer) { return layer.has_layer(); };
  const int v0_layers =
      static_cast<int>(std::count_if(net->layers().begin(), net->layers().end(), is_v0));
  DOPPIO_ENSURE(v0_layers == 0 || v0_layers == net->layers_size())
      << origin << ": mixes V0 layers ('layers { layer { ... } }') with V1 layers";
  const int old_count = net->layers_size();
  // Moved out rather than copied: a weights file holds all of the net's parameters here.
  std::vector<V1LayerParameter> v1_layers;
  for (V1LayerParameter& layer : *net->mutable_layers()) v1_layers.push_back(std::move(layer));
  net->clear_layers();
  if (v0_layers > 0) {
    v1_layers = FoldV0Padding(origin, std::move(v1_layers));
    for (V1LayerParameter& layer : v1_layers) UpgradeV0Layer(origin, &layer);
  }
  for (V1LayerParameter& layer : v1_layers) *net->add_layer() = UpgradeV1Layer(origin, layer);
  LOG(INFO) << origin << ": upgraded from Caffe's " << (v0_layers > 0 ? "V0" : "V1") << " format ("
            << old_count << " 'layers' blocks) to " << net->layer_size()
            << " 'layer' blocks (`doppio upgrade_net` writes the upgraded file)";
}

}  // namespace

bool NetNeedsUpgrade(const NetParameter& net) { return net.layers_size() > 0; }

void MoveDeprecatedTransformFields(const std::string& who, LayerParameter* layer) {
  TransformationParameter* transform = layer->mutable_transform_param();
  if (layer->has_window_data_param()) {
    MoveTransformFields(who, "window_data_param", layer->mutable_window_data_param(), transform);
  } else if (layer->has_image_data_param()) {
    MoveTransformFields(who, "image_data_param", layer->mutable_image_data_param(), transform);
  } else if (layer->has_data_param()) {
    MoveTransformFields(who, "data_param", layer->mutable_data_param(), transform);
  }
  if (transform->ByteSizeLong() == 0) layer->clear_transform_param();
}

bool UpgradeNetInputs(const std::string& origin, NetParameter* net) {
  if (net->input_size() == 0) return false;
  DOPPIO_ENSURE(net->input_shape_size() == 0 || net->input_dim_size() == 0)
      << origin << ": give input_shape or input_dim, not both";
  // Names without shapes are what old .caffemodel files carry: there is no layer to make.
  if (net->input_shape_size() > 0 || net->input_dim_size() > 0) {
    LayerParameter input;
    input.set_name("input");
    input.set_type("Input");
    for (int i = 0; i < net->input_size(); ++i) {
      input.add_top(net->input(i));
      BlobShape* shape = input.mutable_input_param()->add_shape();
      if (net->input_shape_size() > 0) {
        DOPPIO_ENSURE(net->input_shape_size() == net->input_size())
            << origin << ": " << net->input_size() << " inputs but " << net->input_shape_size()
            << " input_shape entries";
        *shape = net->input_shape(i);
      } else {
        DOPPIO_ENSURE(net->input_dim_size() == 4 * net->input_size())
            << origin << ": input_dim needs 4 values per input, got " << net->input_dim_size()
            << " for " << net->input_size() << " inputs";
        for (int d = 0; d < 4; ++d) shape->add_dim(net->input_dim(4 * i + d));
      }
    }
    // First, so that the layers reading the inputs find them.
    *net->add_layer() = std::move(input);
    for (int i = net->layer_size() - 1; i > 0; --i) net->mutable_layer()->SwapElements(i, i - 1);
    LOG(INFO) << origin << ": upgraded the net-level inputs (" << net->input_size()
              << ") to a first 'Input' layer";
  }
  net->clear_input();
  net->clear_input_shape();
  net->clear_input_dim();
  return true;
}

bool UpgradeNetAsNeeded(const std::string& origin, NetParameter* net) {
  const bool layers = NetNeedsUpgrade(*net);
  if (layers) UpgradeLayers(origin, net);
  const bool inputs = UpgradeNetInputs(origin, net);
  return layers || inputs;
}

}  // namespace doppio
