#include "doppio/core/net.hpp"

#include <glog/logging.h>

#include <algorithm>
#include <numeric>
#include <set>
#include <sstream>

#include "doppio/core/debug_info.hpp"
#include "doppio/core/device_math.hpp"
#include "doppio/core/insert_splits.hpp"
#include "doppio/core/layer_fusion.hpp"
#include "doppio/core/layer_registry.hpp"
#include "doppio/device/gpu_math.hpp"
#include "doppio/util/io.hpp"
#include "doppio/util/math_functions.hpp"
#include "doppio/util/snapshot_files.hpp"
#include "doppio/util/upgrade_net.hpp"

namespace doppio {

namespace {
// Makes sure an error says which layer, even when shared code (Blob, fillers) raised it.
[[noreturn]] void RethrowNamingLayer(const Error& error, const LayerParameter& layer) {
  const std::string what = error.what();
  if (what.find("'" + layer.name() + "'") != std::string::npos) throw error;
  DOPPIO_FAIL() << DescribeLayer(layer) << ": " << what;
}

}  // namespace

template <typename Dtype>
Net<Dtype>::Net(const NetParameter& param, std::uint64_t seed, std::shared_ptr<GpuContext> gpu,
                const CpuOptions& cpu)
    : seed_(seed), gpu_(std::move(gpu)), cpu_options_(cpu) {
  Init(param);
  if (gpu_) SetGpu(gpu_);
  // What a layer runs in is known once the fusions ran (a BatchNorm runs bf16 only fused with
  // its Scale) and it has its device (a cuDNN convolution's TF32).
  for (const auto& layer : layers_) {
    const LayerParameter& named = layer->layer_param();
    DOPPIO_ENSURE(!NamesItsPrecision(named) || layer->precision().math == named.precision())
        << DescribeLayer(named) << ": precision " << PrecisionName(named.precision())
        << " is not what engine " << layer->engine() << " runs here ("
        << DescribePrecision(layer->precision())
        << "); on the CPU, engine ONEDNN runs bf16 for Convolution, InnerProduct, ReLU, "
           "Pooling, LRN, Eltwise SUM, and BatchNorm followed by an in-place Scale; on the GPU, "
           "cuDNN's Convolution, InnerProduct, ReLU, Pooling MAX and AVE, Dropout, Split, "
           "Concat and Eltwise SUM run bf16 and fp16, and --tf32_conv decides fp32 or tf32 for "
           "every fp32 convolution";
  }
  LogEngines();
}

template <typename Dtype>
void Net<Dtype>::SetGpu(std::shared_ptr<GpuContext> gpu) {
  gpu_ = std::move(gpu);
  for (auto& layer : layers_) layer->SetGpu(gpu_);
#ifdef DOPPIO_WITH_CUDA
  if (!gpu_) return;
  // Layers without bottoms (inputs, data) produce their tops on the host every iteration:
  // page-locked host memory makes those uploads fast.
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    if (!bottom_vecs_[i].empty()) continue;
    for (Blob<Dtype>* top : top_vecs_[i]) top->data()->PinHostMemory();
  }
#endif
}

template <typename Dtype>
bool Net<Dtype>::StateMeetsRule(const NetState& state, const NetStateRule& rule,
                                const std::string& layer_name) {
  if (rule.has_phase() && rule.phase() != state.phase()) return false;
  if (rule.has_min_level() && state.level() < rule.min_level()) return false;
  if (rule.has_max_level() && state.level() > rule.max_level()) return false;
  const auto has_stage = [&state](const std::string& stage) {
    return std::find(state.stage().begin(), state.stage().end(), stage) != state.stage().end();
  };
  for (const auto& stage : rule.stage()) {
    if (!has_stage(stage)) return false;
  }
  for (const auto& stage : rule.not_stage()) {
    if (has_stage(stage)) return false;
  }
  return true;
}

template <typename Dtype>
NetParameter Net<Dtype>::FilterNet(const NetParameter& param) {
  NetParameter filtered = param;
  filtered.clear_layer();
  const NetState& state = param.state();
  for (const auto& layer : param.layer()) {
    DOPPIO_ENSURE(layer.include_size() == 0 || layer.exclude_size() == 0)
        << "layer '" << layer.name() << "' specifies both include and exclude rules";
    // No include rules means included unless excluded; include rules need one match.
    bool included = layer.include_size() == 0;
    for (const auto& rule : layer.exclude()) {
      if (StateMeetsRule(state, rule, layer.name())) included = false;
    }
    for (const auto& rule : layer.include()) {
      if (StateMeetsRule(state, rule, layer.name())) included = true;
    }
    if (included) *filtered.add_layer() = layer;
  }
  return filtered;
}

template <typename Dtype>
void Net<Dtype>::Init(const NetParameter& in_param) {
  CheckSupportedFields(in_param, "net '" + in_param.name() + "'");
  phase_ = in_param.state().phase();
  name_ = in_param.name();
  debug_info_ = in_param.debug_info();
  NetParameter with_inputs = in_param;
  UpgradeNetInputs("net '" + name_ + "'", &with_inputs);
  const NetParameter param = InsertSplits(FilterNet(with_inputs));
  LOG(INFO) << "Initializing net '" << name_ << "' for phase " << Phase_Name(phase_);

  // The device's own precision where the net names none: fp32 (TF32 convolutions on the GPU
  // are GpuOptions', as before precision was named).
  const Precision precision = param.precision() == PRECISION_DEFAULT ? FP32 : param.precision();
  CheckPrecisionRuns(precision, gpu_.get(), "net '" + name_ + "'");

  std::map<std::string, int> available_blobs;
  std::size_t memory_used = 0;
  const int num_layers = param.layer_size();
  bottom_vecs_.resize(num_layers);
  top_vecs_.resize(num_layers);
  bottom_id_vecs_.resize(num_layers);
  top_id_vecs_.resize(num_layers);
  param_id_vecs_.resize(num_layers);
  bottom_need_backward_.resize(num_layers);

  for (int layer_id = 0; layer_id < num_layers; ++layer_id) {
    LayerParameter layer_param = param.layer(layer_id);
    if (!layer_param.has_phase()) layer_param.set_phase(phase_);
    DOPPIO_ENSURE(layer_param.has_name() && !layer_param.name().empty())
        << "layer #" << layer_id << " of net '" << name_ << "' (type " << layer_param.type()
        << ") has no name";
    DOPPIO_ENSURE(layer_param.propagate_down_size() == 0 ||
                  layer_param.propagate_down_size() == layer_param.bottom_size())
        << "layer '" << layer_param.name() << "' has " << layer_param.propagate_down_size()
        << " propagate_down values for " << layer_param.bottom_size() << " bottoms";
    try {
      layers_.push_back(
          LayerRegistry<Dtype>::CreateLayer(layer_param, gpu_ ? Mode::GPU : Mode::CPU));
    } catch (const Error& error) {
      RethrowNamingLayer(error, layer_param);
    }
    Layer<Dtype>* layer = layers_.back().get();
    layer->set_cpu_options(cpu_options_);
    if (NamesItsPrecision(layer_param)) {
      try {
        CheckPrecisionRuns(layer_param.precision(), gpu_.get(), DescribeLayer(layer_param));
      } catch (const Error& error) {
        RethrowNamingLayer(error, layer_param);
      }
    }
    layer->set_precision_request(RequestedPrecision(layer_param, precision));
    layer->set_seed(DeriveSeed(seed_, layer_id));
    layer->set_batch_position(batch_position_);
    layer_names_.push_back(layer_param.name());
    layer_index_[layer_param.name()] = layer_id;
    VLOG(1) << "Creating layer " << layer_param.name();

    bool need_backward = false;
    for (int bottom_id = 0; bottom_id < layer_param.bottom_size(); ++bottom_id) {
      const int blob_id = AppendBottom(param, layer_id, bottom_id, &available_blobs);
      need_backward |= blob_need_backward_[blob_id];
    }
    for (int top_id = 0; top_id < layer_param.top_size(); ++top_id) {
      AppendTop(param, layer_id, top_id, &available_blobs);
    }
    // Layers that name fewer tops than they produce get anonymous ones.
    if (layer->AutoTopBlobs()) {
      const int needed = std::max(layer->MinTopBlobs(), layer->ExactNumTopBlobs());
      for (int top_id = layer_param.top_size(); top_id < needed; ++top_id) {
        AppendTop(param, layer_id, -1, &available_blobs);
      }
    }

    // Only an Input layer without input_param.shape leaves its tops unshaped; a layer set up
    // on such a bottom would take the never-shaped blob for a scalar.
    for (std::size_t bottom_id = 0; bottom_id < bottom_vecs_[layer_id].size(); ++bottom_id) {
      DOPPIO_ENSURE(bottom_vecs_[layer_id][bottom_id]->data() != nullptr)
          << DescribeLayer(layer_param) << ": its bottom '"
          << blob_names_[bottom_id_vecs_[layer_id][bottom_id]]
          << "' has no shape (an Input layer needs input_param { shape { dim: ... } })";
    }
    try {
      layer->SetUp(bottom_vecs_[layer_id], top_vecs_[layer_id]);
    } catch (const Error& error) {
      RethrowNamingLayer(error, layer_param);
    }
    for (std::size_t top_id = 0; top_id < top_vecs_[layer_id].size(); ++top_id) {
      const int blob_id = top_id_vecs_[layer_id][top_id];
      if (blob_loss_weights_.size() <= static_cast<std::size_t>(blob_id)) {
        blob_loss_weights_.resize(blob_id + 1, Dtype(0));
      }
      blob_loss_weights_[blob_id] = layer->loss(top_id);
      VLOG(1) << "Top shape: " << top_vecs_[layer_id][top_id]->shape_string();
      if (layer->loss(top_id) != Dtype(0)) {
        LOG(INFO) << "    with loss weight " << layer->loss(top_id);
      }
      memory_used += top_vecs_[layer_id][top_id]->count();
    }

    const int num_param_blobs = static_cast<int>(layer->blobs().size());
    DOPPIO_ENSURE(layer_param.param_size() <= num_param_blobs)
        << layer->Describe() << " has " << num_param_blobs << " parameter blobs but "
        << layer_param.param_size() << " param specs";
    for (int param_id = 0; param_id < num_param_blobs; ++param_id) {
      const bool has_spec = param_id < layer_param.param_size();
      const bool param_need_backward = !has_spec || layer_param.param(param_id).lr_mult() != 0.f;
      // A layer may already have switched a parameter off (BatchNorm's statistics).
      const bool learnable = param_need_backward && layer->param_propagate_down(param_id);
      layer->set_param_propagate_down(param_id, learnable);
      need_backward |= learnable;
    }
    for (int param_id = 0; param_id < num_param_blobs; ++param_id) {
      AppendParam(param, layer_id, param_id);
    }
    layer_need_backward_.push_back(need_backward);
    if (need_backward) {
      for (int blob_id : top_id_vecs_[layer_id]) blob_need_backward_[blob_id] = true;
    }
  }

  DecideBackward(param);
  ShareKeptCopies();

  // As in Caffe, the tops of Input layers are the net's inputs (what a caller fills).
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    if (std::string(layers_[i]->type()) != "Input") continue;
    for (Blob<Dtype>* top : top_vecs_[i]) net_input_blobs_.push_back(top);
  }
  for (const auto& entry : available_blobs) {
    net_output_blobs_.push_back(blobs_[entry.second].get());
    net_output_blob_indices_.push_back(entry.second);
  }
  for (std::size_t i = 0; i < blob_names_.size(); ++i) blob_index_[blob_names_[i]] = i;
  WarnSharedLayerNames();

  BuildArena();

  LOG(INFO) << "Network '" << name_ << "' (" << Phase_Name(phase_) << "): " << layers_.size()
            << " layers, " << arena_count_ << " learnable parameters";
  LayerFusions<Dtype>::Run(*this);
  CollectInputExchanges();
  LOG(INFO) << "Memory required for data: " << memory_used * sizeof(Dtype) << " bytes";
  LOG(INFO) << "Memory required for parameters: " << parameter_bytes()
            << " bytes; activations (data + diff): " << activation_bytes() << " bytes";
}

template <typename Dtype>
void Net<Dtype>::AppendTop(const NetParameter& param, int layer_id, int top_id,
                           std::map<std::string, int>* available_blobs) {
  const LayerParameter& layer_param = param.layer(layer_id);
  const bool named = top_id >= 0;
  const std::string blob_name =
      named ? layer_param.top(top_id)
            : layer_param.name() + "_auto_top_" + std::to_string(top_vecs_[layer_id].size());
  const bool in_place =
      named && top_id < layer_param.bottom_size() && blob_name == layer_param.bottom(top_id);
  if (in_place) {
    // The layer writes over its bottom: reuse that blob.
    const int blob_id = bottom_id_vecs_[layer_id][top_id];
    top_vecs_[layer_id].push_back(blobs_[blob_id].get());
    top_id_vecs_[layer_id].push_back(blob_id);
    (*available_blobs)[blob_name] = blob_id;
    return;
  }
  DOPPIO_ENSURE(std::find(blob_names_.begin(), blob_names_.end(), blob_name) == blob_names_.end())
      << "layer '" << layer_param.name() << "': top blob '" << blob_name
      << "' is already produced by another layer (only an in-place layer, whose top repeats "
         "its bottom at the same position, may write an existing blob)";
  const int blob_id = static_cast<int>(blobs_.size());
  blobs_.push_back(std::make_shared<Blob<Dtype>>());
  blob_names_.push_back(blob_name);
  blob_need_backward_.push_back(false);
  top_vecs_[layer_id].push_back(blobs_.back().get());
  top_id_vecs_[layer_id].push_back(blob_id);
  (*available_blobs)[blob_name] = blob_id;
}

template <typename Dtype>
int Net<Dtype>::AppendBottom(const NetParameter& param, int layer_id, int bottom_id,
                             std::map<std::string, int>* available_blobs) {
  const LayerParameter& layer_param = param.layer(layer_id);
  const std::string& blob_name = layer_param.bottom(bottom_id);
  auto it = available_blobs->find(blob_name);
  if (it == available_blobs->end()) {
    const bool exists =
        std::find(blob_names_.begin(), blob_names_.end(), blob_name) != blob_names_.end();
    DOPPIO_FAIL() << DescribeLayer(layer_param) << ": bottom blob '" << blob_name << "' "
                  << (exists ? "was already consumed by an earlier in-place layer"
                             : "is not produced by any earlier layer");
  }
  const int blob_id = it->second;
  bottom_vecs_[layer_id].push_back(blobs_[blob_id].get());
  bottom_id_vecs_[layer_id].push_back(blob_id);
  available_blobs->erase(it);
  bool need_backward = blob_need_backward_[blob_id];
  if (layer_param.propagate_down_size() > 0) {
    need_backward = layer_param.propagate_down(bottom_id);
  }
  bottom_need_backward_[layer_id].push_back(need_backward);
  return blob_id;
}

template <typename Dtype>
void Net<Dtype>::AppendParam(const NetParameter& param, int layer_id, int param_id) {
  const LayerParameter& layer_param = layers_[layer_id]->layer_param();
  const bool has_spec = param_id < layer_param.param_size();
  const ParamSpec default_spec;
  const ParamSpec& spec = has_spec ? layer_param.param(param_id) : default_spec;
  const int net_param_id = static_cast<int>(params_.size());
  params_.push_back(layers_[layer_id]->blobs()[param_id]);
  param_id_vecs_[layer_id].push_back(net_param_id);
  param_layer_indices_.push_back({layer_id, param_id});
  param_display_names_.push_back(spec.name().empty() ? std::to_string(param_id) : spec.name());

  if (spec.name().empty() || param_names_index_.count(spec.name()) == 0) {
    // A parameter of its own: it is learnable and owns its storage.
    if (!spec.name().empty()) param_names_index_[spec.name()] = net_param_id;
    param_owners_.push_back(-1);
    learnable_param_ids_.push_back(net_param_id);
    learnable_params_.push_back(params_.back().get());
    learnable_param_layer_.push_back(layer_id);
    params_lr_.push_back(spec.lr_mult());
    params_weight_decay_.push_back(spec.decay_mult());
    return;
  }
  // Shared with an earlier layer's parameter of the same name.
  const int owner_id = param_names_index_[spec.name()];
  param_owners_.push_back(owner_id);
  const auto& owner_index = param_layer_indices_[owner_id];
  Blob<Dtype>* owner = params_[owner_id].get();
  Blob<Dtype>* mine = params_.back().get();
  const std::string owner_layer = layer_names_[owner_index.first];
  if (spec.share_mode() == ParamSpec::PERMISSIVE) {
    DOPPIO_ENSURE(owner->count() == mine->count())
        << "layer '" << layer_param.name() << "' shares parameter '" << spec.name()
        << "' with layer '" << owner_layer << "' but their counts differ: " << mine->shape_string()
        << " vs " << owner->shape_string();
  } else {
    DOPPIO_ENSURE(owner->shape() == mine->shape())
        << "layer '" << layer_param.name() << "' shares parameter '" << spec.name()
        << "' with layer '" << owner_layer << "' but their shapes differ: " << mine->shape_string()
        << " vs " << owner->shape_string() << " (set share_mode: PERMISSIVE to share by count)";
  }
  const int learnable_id = static_cast<int>(
      std::find(learnable_param_ids_.begin(), learnable_param_ids_.end(), owner_id) -
      learnable_param_ids_.begin());
  // The owner's gradient is final only once the earliest layer using it has run backward.
  learnable_param_layer_[learnable_id] = std::min(learnable_param_layer_[learnable_id], layer_id);
  if (has_spec && spec.has_lr_mult()) {
    const ParamSpec* owner_spec =
        owner_index.second < layers_[owner_index.first]->layer_param().param_size()
            ? &layers_[owner_index.first]->layer_param().param(owner_index.second)
            : nullptr;
    if (owner_spec != nullptr && owner_spec->has_lr_mult()) {
      DOPPIO_ENSURE(spec.lr_mult() == owner_spec->lr_mult())
          << "shared parameter '" << spec.name() << "' has lr_mult " << spec.lr_mult()
          << " in layer '" << layer_param.name() << "' but " << owner_spec->lr_mult()
          << " in layer '" << owner_layer << "'";
    } else {
      params_lr_[learnable_id] = spec.lr_mult();
    }
  }
  if (has_spec && spec.has_decay_mult()) {
    params_weight_decay_[learnable_id] = spec.decay_mult();
  }
}

// Caffe's in-place Scale copies its input for Backward even where the BatchNorm before it
// keeps the same values (its normalised output): one bottom-sized buffer per pair, a
// quarter of ResNet-50's activations. Only adjacent layers qualify, so nothing can write the
// blob between the two Forwards (a ForwardFromTo starting at the second would leave the copy
// stale, as it leaves the first layer's own Backward).
template <typename Dtype>
void Net<Dtype>::ShareKeptCopies() {
  std::size_t saved_bytes = 0;
  for (std::size_t i = 1; i < layers_.size(); ++i) {
    if (bottom_vecs_[i].empty()) continue;
    const std::vector<Blob<Dtype>*>& before = top_vecs_[i - 1];
    for (std::size_t t = 0; t < before.size(); ++t) {
      if (before[t] != bottom_vecs_[i][0]) continue;
      const Blob<Dtype>* kept = layers_[i - 1]->KeptTopCopy(static_cast<int>(t));
      if (kept && layers_[i]->UseKeptBottomCopy(kept)) {
        ++shared_kept_copies_;
        saved_bytes += bottom_vecs_[i][0]->count() * sizeof(Dtype);
      }
      break;
    }
  }
  if (shared_kept_copies_ > 0) {
    LOG(INFO) << shared_kept_copies_ << " layer(s) read the input copy the layer before keeps "
              << "for Backward instead of their own: " << saved_bytes << " bytes saved";
  }
}

template <typename Dtype>
void Net<Dtype>::DecideBackward(const NetParameter& param) {
  // Walk from the top: a layer needs backward only if some loss depends on its outputs.
  std::set<std::string> blobs_under_loss;
  std::set<std::string> blobs_skip_backward;
  for (int layer_id = static_cast<int>(layers_.size()) - 1; layer_id >= 0; --layer_id) {
    bool contributes_loss = false;
    bool skip_propagate_down = true;
    for (std::size_t top_id = 0; top_id < top_vecs_[layer_id].size(); ++top_id) {
      const std::string& blob_name = blob_names_[top_id_vecs_[layer_id][top_id]];
      if (layers_[layer_id]->loss(top_id) != Dtype(0) || blobs_under_loss.count(blob_name)) {
        contributes_loss = true;
      }
      if (!blobs_skip_backward.count(blob_name)) skip_propagate_down = false;
    }
    if (layer_need_backward_[layer_id] && skip_propagate_down) {
      layer_need_backward_[layer_id] = false;
      std::fill(bottom_need_backward_[layer_id].begin(), bottom_need_backward_[layer_id].end(),
                false);
    }
    if (!contributes_loss) layer_need_backward_[layer_id] = false;
    for (std::size_t bottom_id = 0; bottom_id < bottom_vecs_[layer_id].size(); ++bottom_id) {
      const std::string& blob_name = blob_names_[bottom_id_vecs_[layer_id][bottom_id]];
      if (contributes_loss) {
        blobs_under_loss.insert(blob_name);
      } else {
        bottom_need_backward_[layer_id][bottom_id] = false;
      }
      if (!bottom_need_backward_[layer_id][bottom_id]) blobs_skip_backward.insert(blob_name);
    }
  }
  if (param.force_backward()) {
    for (std::size_t layer_id = 0; layer_id < layers_.size(); ++layer_id) {
      layer_need_backward_[layer_id] = true;
      for (std::size_t bottom_id = 0; bottom_id < bottom_vecs_[layer_id].size(); ++bottom_id) {
        const bool allowed = layers_[layer_id]->AllowForceBackward(bottom_id);
        bottom_need_backward_[layer_id][bottom_id] =
            bottom_need_backward_[layer_id][bottom_id] || allowed;
        blob_need_backward_[bottom_id_vecs_[layer_id][bottom_id]] =
            blob_need_backward_[bottom_id_vecs_[layer_id][bottom_id]] || allowed;
      }
      for (std::size_t param_id = 0; param_id < layers_[layer_id]->blobs().size(); ++param_id) {
        layers_[layer_id]->set_param_propagate_down(param_id, true);
      }
    }
  }
}

template <typename Dtype>
void Net<Dtype>::BuildArena() {
  // Backward finishes layers from last to first, so a parameter whose last user is a later
  // layer is final earlier and goes first; within a layer, blob order. Gradients that become
  // final together then lie together, for whoever reads them as backward goes (the order of
  // communication is planned by its reader, not assumed from this). Files keep Caffe's
  // order, the order AppendParam listed the owners in, so this one may change freely.
  std::vector<int> order(learnable_params_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [this](int a, int b) {
    return learnable_param_layer_[a] > learnable_param_layer_[b];
  });
  arena_ids_in_caffe_order_.assign(order.size(), 0);
  for (std::size_t arena_id = 0; arena_id < order.size(); ++arena_id) {
    arena_ids_in_caffe_order_[order[arena_id]] = static_cast<int>(arena_id);
  }
  std::vector<Blob<Dtype>*> params;
  std::vector<int> ids, layer_of;
  std::vector<float> lr, decay;
  for (int i : order) {
    params.push_back(learnable_params_[i]);
    ids.push_back(learnable_param_ids_[i]);
    layer_of.push_back(learnable_param_layer_[i]);
    lr.push_back(params_lr_[i]);
    decay.push_back(params_weight_decay_[i]);
  }
  learnable_params_ = params;
  learnable_param_ids_ = ids;
  learnable_param_layer_ = layer_of;
  params_lr_ = lr;
  params_weight_decay_ = decay;

  arena_offsets_.clear();
  arena_count_ = 0;
  for (Blob<Dtype>* blob : learnable_params_) {
    arena_offsets_.push_back(arena_count_);
    arena_count_ += blob->count();
  }
  arena_data_ = std::make_shared<SyncedMemory>(arena_count_ * sizeof(Dtype));
  arena_diff_ = std::make_shared<SyncedMemory>(arena_count_ * sizeof(Dtype));
  Dtype* data = static_cast<Dtype*>(arena_data_->mutable_cpu_data());
  // Allocated here, before any blob views it, so that every diff view starts on live host memory.
  arena_diff_->mutable_cpu_data();
  for (std::size_t i = 0; i < learnable_params_.size(); ++i) {
    Blob<Dtype>* blob = learnable_params_[i];
    const std::size_t bytes = blob->count() * sizeof(Dtype);
    const std::size_t offset = arena_offsets_[i] * sizeof(Dtype);
    if (blob->count() > 0) cpu_copy(blob->count(), blob->cpu_data(), data + arena_offsets_[i]);
    blob->SetDataMemory(std::make_shared<SyncedMemory>(arena_data_, offset, bytes));
    blob->SetDiffMemory(std::make_shared<SyncedMemory>(arena_diff_, offset, bytes));
  }
  ShareWeights();
}

template <typename Dtype>
void Net<Dtype>::ShareWeights() {
  // Sharing layers read and write the owner's data and accumulate into its diff.
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (param_owners_[i] < 0) continue;
    params_[i]->ShareData(*params_[param_owners_[i]]);
    params_[i]->ShareDiff(*params_[param_owners_[i]]);
  }
}

template <typename Dtype>
Dtype* Net<Dtype>::mutable_arena_data() {
  return static_cast<Dtype*>(arena_data_->mutable_cpu_data());
}
template <typename Dtype>
Dtype* Net<Dtype>::mutable_arena_diff() {
  return static_cast<Dtype*>(arena_diff_->mutable_cpu_data());
}
template <typename Dtype>
const Dtype* Net<Dtype>::arena_data() const {
  return static_cast<const Dtype*>(arena_data_->cpu_data());
}
template <typename Dtype>
const Dtype* Net<Dtype>::arena_diff() const {
  return static_cast<const Dtype*>(arena_diff_->cpu_data());
}

#ifdef DOPPIO_WITH_CUDA
template <typename Dtype>
Dtype* Net<Dtype>::mutable_arena_gpu_data() {
  CHECK(gpu_) << "net '" << name_ << "' is not on a GPU";
  return static_cast<Dtype*>(arena_data_->mutable_gpu_data(*gpu_));
}
template <typename Dtype>
Dtype* Net<Dtype>::mutable_arena_gpu_diff() {
  CHECK(gpu_) << "net '" << name_ << "' is not on a GPU";
  return static_cast<Dtype*>(arena_diff_->mutable_gpu_data(*gpu_));
}
template <typename Dtype>
const Dtype* Net<Dtype>::arena_gpu_data() const {
  CHECK(gpu_) << "net '" << name_ << "' is not on a GPU";
  return static_cast<const Dtype*>(arena_data_->gpu_data(*gpu_));
}
template <typename Dtype>
const Dtype* Net<Dtype>::arena_gpu_diff() const {
  CHECK(gpu_) << "net '" << name_ << "' is not on a GPU";
  return static_cast<const Dtype*>(arena_diff_->gpu_data(*gpu_));
}
#endif

template <typename Dtype>
void Net<Dtype>::CollectInputExchanges() {
  input_exchanges_.assign(layers_.size(), nullptr);
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    InputExchange<Dtype>* exchange = layers_[i]->input_exchange();
    if (exchange == nullptr) continue;
    const auto& bottom = bottom_vecs_[i];
    const auto& top = top_vecs_[i];
    CHECK(bottom.size() == 1 && top.size() == 1 && bottom[0] == top[0])
        << layers_[i]->Describe() << " keeps its input by exchange but is not in place on one blob";
    input_exchanges_[i] = exchange;
  }
}

template <typename Dtype>
Dtype Net<Dtype>::ForwardFromTo(int start, int end) {
  CHECK_GE(start, 0);
  CHECK_LT(end, static_cast<int>(layers_.size()));
  Dtype loss = 0;
  for (int i = start; i <= end; ++i) {
    for (const auto& callback : before_forward_) callback(i);
    if (input_exchanges_[i] != nullptr) input_exchanges_[i]->Exchange(top_vecs_[i][0]);
    loss += layers_[i]->Forward(bottom_vecs_[i], top_vecs_[i]);
    if (debug_info_) LogForwardDebugInfo(*this, i);
    for (const auto& callback : after_forward_) callback(i);
  }
  return loss;
}

template <typename Dtype>
const std::vector<Blob<Dtype>*>& Net<Dtype>::Forward(Dtype* loss) {
  const Dtype total = layers_.empty() ? Dtype(0) : ForwardFromTo(0, layers_.size() - 1);
  if (loss != nullptr) *loss = total;
  return net_output_blobs_;
}

template <typename Dtype>
void Net<Dtype>::BackwardFromTo(int start, int end) {
  CHECK_GE(end, 0);
  CHECK_LT(start, static_cast<int>(layers_.size()));
  for (int i = start; i >= end; --i) {
    for (const auto& callback : before_backward_) callback(i);
    if (layer_need_backward_[i]) {
      layers_[i]->Backward(top_vecs_[i], bottom_need_backward_[i], bottom_vecs_[i]);
      if (debug_info_) LogBackwardDebugInfo(*this, i);
    }
    for (const auto& callback : after_backward_) callback(i);
  }
}

template <typename Dtype>
void Net<Dtype>::Backward() {
  if (layers_.empty()) return;
  if (loss_scale_ == Dtype(1)) {
    BackwardFromTo(layers_.size() - 1, 0);
    return;
  }
  // Only for the pass: Forward's loss is the dot product of the top and this diff.
  ScaleLossWeights(loss_scale_);
  BackwardFromTo(layers_.size() - 1, 0);
  ScaleLossWeights(Dtype(1));
}

template <typename Dtype>
void Net<Dtype>::ScaleLossWeights(Dtype scale) {
  const DeviceMath<Dtype> m(gpu_.get());
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    for (std::size_t t = 0; t < top_vecs_[i].size(); ++t) {
      const Dtype weight = layers_[i]->loss(static_cast<int>(t));
      if (weight == Dtype(0)) continue;
      Blob<Dtype>* top = top_vecs_[i][t];
      m.set(top->count(), weight * scale, m.mutable_diff(top));
    }
  }
}

template <typename Dtype>
Dtype Net<Dtype>::ForwardBackward() {
  Dtype loss;
  Forward(&loss);
  Backward();
  return loss;
}

template <typename Dtype>
void Net<Dtype>::Reshape() {
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    layers_[i]->Reshape(bottom_vecs_[i], top_vecs_[i]);
  }
}

template <typename Dtype>
void Net<Dtype>::ClearParamDiffs() {
  if (arena_count_ == 0) return;
#ifdef DOPPIO_WITH_CUDA
  if (gpu_) {
    gpu_set(*gpu_, static_cast<int>(arena_count_), Dtype(0), mutable_arena_gpu_diff());
    return;
  }
#endif
  cpu_set(static_cast<int>(arena_count_), Dtype(0), mutable_arena_diff());
}

template <typename Dtype>
bool Net<Dtype>::Update() {
  if (arena_count_ == 0) return true;
  if (debug_info_) LogUpdateDebugInfo(*this);
#ifdef DOPPIO_WITH_CUDA
  if (gpu_) {
    return gpu_axpy_finite(*gpu_, arena_count_, Dtype(-1), arena_gpu_diff(),
                           mutable_arena_gpu_data());
  }
#endif
  return cpu_axpy_finite(arena_count_, Dtype(-1), arena_diff(), mutable_arena_data());
}

template <typename Dtype>
std::string Net<Dtype>::layer_label(int layer_id) const {
  const std::string& name = layer_names_[layer_id];
  if (std::count(layer_names_.begin(), layer_names_.end(), name) < 2) return name;
  return name + "#" + std::to_string(layer_id);
}

template <typename Dtype>
InputStats Net<Dtype>::input_stats() const {
  InputStats sum;
  for (const auto& layer : layers_) sum += layer->input_stats();
  return sum;
}

template <typename Dtype>
void Net<Dtype>::LogEngines() const {
  std::map<std::string, std::vector<std::string>> labels_by_engine;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    labels_by_engine[layers_[i]->engine()].push_back(layer_label(static_cast<int>(i)));
  }
  for (const auto& [engine, labels] : labels_by_engine) {
    std::ostringstream list;
    for (const auto& label : labels) list << " " << label;
    LOG(INFO) << "Engine " << engine << " runs " << labels.size() << " layer"
              << (labels.size() == 1 ? "" : "s") << ":" << list.str();
  }
  // And, where not every layer is fp32, the precision of each (storage, math where it differs).
  std::map<std::string, std::vector<std::string>> labels_by_precision;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    labels_by_precision[DescribePrecision(layers_[i]->precision())].push_back(
        layer_label(static_cast<int>(i)));
  }
  if (labels_by_precision.size() == 1 && labels_by_precision.count("fp32") == 1) return;
  for (const auto& [precision, labels] : labels_by_precision) {
    std::ostringstream list;
    for (const auto& label : labels) list << " " << label;
    LOG(INFO) << "Precision " << precision << " runs " << labels.size() << " layer"
              << (labels.size() == 1 ? "" : "s") << ":" << list.str();
  }
}

template <typename Dtype>
void Net<Dtype>::WarnSharedLayerNames() const {
  std::map<std::string, std::vector<int>> ids_by_name;
  for (std::size_t i = 0; i < layer_names_.size(); ++i) {
    ids_by_name[layer_names_[i]].push_back(static_cast<int>(i));
  }
  for (const auto& entry : ids_by_name) {
    const std::vector<int>& ids = entry.second;
    if (ids.size() < 2) continue;
    std::ostringstream layers;
    for (std::size_t k = 0; k < ids.size(); ++k) {
      if (k > 0) layers << (k + 1 == ids.size() ? " and " : ", ");
      layers << "#" << ids[k] << " (" << layers_[ids[k]]->type() << ")";
    }
    LOG(WARNING) << "Net '" << name_ << "' (" << Phase_Name(phase_) << "): layers " << layers.str()
                 << " share the name '" << entry.first
                 << "'. As in Caffe, weights loaded by that name (--weights, and a test net's "
                    "share of the train net's) go to the first, layer #"
                 << ids.front() << "; the "
                 << (ids.size() == 2 ? "other keeps its" : "others keep their")
                 << " own (a --snapshot of this net restores each)";
  }
}

template <typename Dtype>
void Net<Dtype>::CopyLayerBlobs(int layer_id,
                                const google::protobuf::RepeatedPtrField<BlobProto>& blobs) {
  auto& target = layers_[layer_id]->blobs();
  DOPPIO_ENSURE(static_cast<int>(target.size()) == blobs.size())
      << "cannot copy weights into layer '" << layer_label(layer_id) << "': it has "
      << target.size() << " parameter blob(s), the weights file has " << blobs.size();
  for (int j = 0; j < blobs.size(); ++j) {
    if (!target[j]->ShapeEquals(blobs.Get(j))) {
      DOPPIO_FAIL() << "cannot copy weights into layer '" << layer_label(layer_id) << "', blob "
                    << j << ": the weights file has shape "
                    << ShapeString(BlobProtoShape(blobs.Get(j))) << " but the net has "
                    << target[j]->shape_string();
    }
    target[j]->FromProto(blobs.Get(j), false);
  }
}

template <typename Dtype>
void Net<Dtype>::CopyTrainedLayersFrom(const NetParameter& param) {
  DOPPIO_ENSURE(!NetNeedsUpgrade(param))
      << "net '" << name() << "': the weights are in Caffe's old 'layers' format; upgrade them "
      << "first (UpgradeNetAsNeeded)";
  const auto copy_layer = [this](const auto& source) {
    // Caffe searches its layers in order: the first of a name takes the weights.
    const auto first = std::find(layer_names_.begin(), layer_names_.end(), source.name());
    if (first == layer_names_.end()) {
      LOG(INFO) << "Ignoring source layer " << source.name();
      return;
    }
    CopyLayerBlobs(static_cast<int>(first - layer_names_.begin()), source.blobs());
  };
  for (const auto& layer : param.layer()) copy_layer(layer);
}

template <typename Dtype>
void Net<Dtype>::RestoreTrainedLayersFrom(const NetParameter& param) {
  DOPPIO_ENSURE(!NetNeedsUpgrade(param))
      << "net '" << name() << "': the weights are in Caffe's old 'layers' format; upgrade them "
      << "first (UpgradeNetAsNeeded)";
  std::map<std::string, int> taken;
  const auto copy_layer = [this, &taken](const auto& source) {
    int occurrence = taken[source.name()]++;
    for (std::size_t i = 0; i < layer_names_.size(); ++i) {
      if (layer_names_[i] != source.name() || occurrence-- > 0) continue;
      CopyLayerBlobs(static_cast<int>(i), source.blobs());
      return;
    }
    LOG(INFO) << "Ignoring source layer " << source.name();
  };
  for (const auto& layer : param.layer()) copy_layer(layer);
}

template <typename Dtype>
void Net<Dtype>::CopyTrainedLayersFromFile(const std::string& path) {
  NetParameter param;
  ReadWeightsFile(path, &param);
  DOPPIO_ENSURE(param.layer_size() > 0)
      << path << ": not a weights file (a NetParameter with layers); it holds no layers";
  CopyTrainedLayersFrom(param);
}

template <typename Dtype>
void Net<Dtype>::ShareTrainedLayersWith(const Net& other) {
  for (std::size_t i = 0; i < other.layers().size(); ++i) {
    // As CopyTrainedLayersFrom: the first layer of the name here takes the weights.
    const auto first = std::find(layer_names_.begin(), layer_names_.end(), other.layer_names()[i]);
    if (first == layer_names_.end()) continue;
    auto& source = other.layers()[i]->blobs();
    auto& target = layers_[first - layer_names_.begin()]->blobs();
    DOPPIO_ENSURE(source.size() == target.size())
        << "layer '" << other.layer_label(static_cast<int>(i)) << "' has " << target.size()
        << " parameter blobs here but " << source.size() << " in the net it shares with";
    for (std::size_t j = 0; j < source.size(); ++j) {
      DOPPIO_ENSURE(source[j]->shape() == target[j]->shape())
          << "layer '" << other.layer_label(static_cast<int>(i)) << "', blob " << j << ": shape "
          << target[j]->shape_string() << " differs from the shared net's "
          << source[j]->shape_string();
      target[j]->ShareData(*source[j]);
    }
  }
}

template <typename Dtype>
void Net<Dtype>::ToProto(NetParameter* param, bool write_diff) const {
  param->Clear();
  param->set_name(name_);
  for (const auto& layer : layers_) {
    LayerParameter* out = param->add_layer();
    *out = layer->layer_param();
    out->clear_blobs();
    for (const auto& blob : layer->blobs()) blob->ToProto(out->add_blobs(), write_diff);
  }
}

template <typename Dtype>
std::shared_ptr<Blob<Dtype>> Net<Dtype>::blob_by_name(const std::string& name) const {
  auto it = blob_index_.find(name);
  DOPPIO_ENSURE(it != blob_index_.end()) << "net '" << name_ << "' has no blob '" << name << "'";
  return blobs_[it->second];
}

template <typename Dtype>
std::shared_ptr<Layer<Dtype>> Net<Dtype>::layer_by_name(const std::string& name) const {
  auto it = layer_index_.find(name);
  DOPPIO_ENSURE(it != layer_index_.end()) << "net '" << name_ << "' has no layer '" << name << "'";
  return layers_[it->second];
}

template <typename Dtype>
std::size_t Net<Dtype>::activation_bytes() const {
  // Only a TRAIN net runs backward (test nets and `doppio test` never touch their diffs).
  const bool backward = phase_ == TRAIN &&
                        std::find(layer_need_backward_.begin(), layer_need_backward_.end(), true) !=
                            layer_need_backward_.end();
  std::set<const SyncedMemory*> counted;
  std::size_t bytes = 0;
  const auto count = [&](const std::shared_ptr<SyncedMemory>& memory) {
    if (!memory) return;  // an Input top not shaped yet
    const SyncedMemory& storage = memory->storage();
    if (counted.insert(&storage).second) bytes += storage.size();
  };
  for (const auto& blob : blobs_) {
    count(blob->data());
    if (backward) count(blob->diff());
  }
  return bytes;
}

template <typename Dtype>
std::size_t Net<Dtype>::parameter_bytes() const {
  return 2 * arena_count_ * sizeof(Dtype);
}

DOPPIO_INSTANTIATE_CLASS(Net);

}  // namespace doppio
