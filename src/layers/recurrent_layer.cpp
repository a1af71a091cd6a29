#include "doppio/layers/recurrent_layer.hpp"

#include <algorithm>

#include "doppio/core/layer_registry.hpp"
#include "doppio/device/gpu_math.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

namespace {
void AddShape(InputParameter* input, const std::vector<int>& shape) {
  BlobShape* out = input->add_shape();
  for (int d : shape) out->add_dim(d);
}
}  // namespace

template <typename Dtype>
LayerParameter* RecurrentLayer<Dtype>::AddUnrolledLayer(NetParameter* net, const std::string& name,
                                                        const std::string& type,
                                                        const std::vector<std::string>& bottoms,
                                                        const std::vector<std::string>& tops) {
  LayerParameter* layer = net->add_layer();
  layer->set_name(name);
  layer->set_type(type);
  for (const std::string& b : bottoms) layer->add_bottom(b);
  for (const std::string& t : tops) layer->add_top(t);
  return layer;
}

template <typename Dtype>
void RecurrentLayer<Dtype>::MakeInnerProduct(LayerParameter* layer, int outputs, int axis,
                                             const std::string& weight,
                                             const std::string& bias) const {
  const RecurrentParameter& param = this->layer_param_.recurrent_param();
  InnerProductParameter* ip = layer->mutable_inner_product_param();
  ip->set_num_output(outputs);
  ip->set_axis(axis);
  ip->set_bias_term(!bias.empty());
  *ip->mutable_weight_filler() = param.weight_filler();
  layer->add_param()->set_name(weight);
  if (!bias.empty()) {
    *ip->mutable_bias_filler() = param.bias_filler();
    layer->add_param()->set_name(bias);
  }
}

template <typename Dtype>
int RecurrentLayer<Dtype>::MinBottomBlobs() const {
  const bool expose = this->layer_param_.recurrent_param().expose_hidden();
  return 2 + (expose ? static_cast<int>(RecurrentInputBlobNames().size()) : 0);
}

template <typename Dtype>
int RecurrentLayer<Dtype>::ExactNumTopBlobs() const {
  const bool expose = this->layer_param_.recurrent_param().expose_hidden();
  return static_cast<int>(OutputBlobNames().size()) +
         (expose ? static_cast<int>(RecurrentOutputBlobNames().size()) : 0);
}

template <typename Dtype>
void RecurrentLayer<Dtype>::CheckBottoms(const BlobVec& bottom) {
  DOPPIO_ENSURE(bottom[0]->num_axes() >= 2)
      << this->Describe() << ": bottom 0 must have at least 2 axes (time steps, streams, ...), "
      << "got shape " << bottom[0]->shape_string();
  DOPPIO_ENSURE(T_ == 0 || bottom[0]->shape(0) == T_)
      << this->Describe() << ": the number of time steps changed from " << T_ << " to "
      << bottom[0]->shape(0) << " (bottom 0 " << bottom[0]->shape_string() << ")";
  const int num = bottom[0]->shape(1);
  DOPPIO_ENSURE(bottom[1]->num_axes() == 2 && bottom[1]->shape(0) == bottom[0]->shape(0) &&
                bottom[1]->shape(1) == num)
      << this->Describe() << ": the sequence continuation markers (bottom 1) must be (time "
      << "steps, streams) = (" << bottom[0]->shape(0) << ", " << num << "), got shape "
      << bottom[1]->shape_string();
  if (static_input_) {
    DOPPIO_ENSURE(bottom[2]->num_axes() >= 1 && bottom[2]->shape(0) == num)
        << this->Describe() << ": the static input (bottom 2) must be (streams, ...) with " << num
        << " streams, got shape " << bottom[2]->shape_string();
  }
  N_ = num;
}

template <typename Dtype>
void RecurrentLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const RecurrentParameter& param = this->layer_param_.recurrent_param();
  DOPPIO_ENSURE(param.num_output() > 0 && param.num_output() <= (1u << 30))
      << this->Describe() << ": recurrent_param.num_output must be positive";
  expose_hidden_ = param.expose_hidden();
  const std::vector<std::string> recur_input_names = RecurrentInputBlobNames();
  const int num_exposed = expose_hidden_ ? static_cast<int>(recur_input_names.size()) : 0;
  static_input_ = static_cast<int>(bottom.size()) > 2 + num_exposed;
  T_ = 0;
  CheckBottoms(bottom);
  T_ = bottom[0]->shape(0);

  // The inputs; the architecture adds the rest.
  NetParameter net;
  net.set_name(this->layer_param_.name() + "_unrolled");
  net.mutable_state()->set_phase(this->phase_);
  // The exposed initial state needs its gradient although no parameter depends on it.
  if (expose_hidden_) net.set_force_backward(true);
  LayerParameter* inputs = net.add_layer();
  inputs->set_name("input");
  inputs->set_type("Input");
  inputs->add_top("x");
  AddShape(inputs->mutable_input_param(), bottom[0]->shape());
  inputs->add_top("cont");
  AddShape(inputs->mutable_input_param(), bottom[1]->shape());
  if (static_input_) {
    inputs->add_top("x_static");
    AddShape(inputs->mutable_input_param(), bottom[2]->shape());
  }
  const std::vector<BlobShape> recur_shapes = RecurrentInputShapes();
  for (std::size_t i = 0; i < recur_input_names.size(); ++i) {
    inputs->add_top(recur_input_names[i]);
    *inputs->mutable_input_param()->add_shape() = recur_shapes[i];
  }
  FillUnrolledNet(&net);
  const std::vector<std::string> recur_output_names = RecurrentOutputBlobNames();
  if (expose_hidden_) {
    for (const std::string& name : recur_output_names) {
      LayerParameter* expose = net.add_layer();
      expose->set_name(name + "_expose");
      expose->set_type("Split");
      expose->add_bottom(name);
      expose->add_top(name + "_exposed");
    }
  }
  // Layers named after this one, as Caffe names them.
  for (LayerParameter& layer : *net.mutable_layer()) {
    layer.set_name(this->layer_param_.name() + "_" + layer.name());
  }
  // Pseudo-losses on the outputs make the net decide to run backward down to them; they are
  // never run themselves.
  const std::vector<std::string> output_names = OutputBlobNames();
  for (const std::string& name : output_names) {
    LayerParameter* loss = net.add_layer();
    loss->set_name(name + "_pseudoloss");
    loss->set_type("Reduction");
    loss->add_bottom(name);
    loss->add_top(name + "_pseudoloss");
    loss->add_loss_weight(1);
  }
  // The CPU options reach its layers too; the device follows with SetGpu.
  unrolled_net_ = std::make_unique<Net<Dtype>>(net, this->seed(), nullptr, this->cpu_options());
  // Caffe's recurrent_param.debug_info: the unrolled net logs its layers' magnitudes.
  unrolled_net_->set_debug_info(param.debug_info());

  x_input_ = unrolled_net_->blob_by_name("x").get();
  cont_input_ = unrolled_net_->blob_by_name("cont").get();
  x_static_input_ = static_input_ ? unrolled_net_->blob_by_name("x_static").get() : nullptr;
  recur_inputs_.clear();
  recur_outputs_.clear();
  exposed_outputs_.clear();
  outputs_.clear();
  for (const std::string& name : recur_input_names) {
    recur_inputs_.push_back(unrolled_net_->blob_by_name(name).get());
  }
  for (const std::string& name : recur_output_names) {
    recur_outputs_.push_back(unrolled_net_->blob_by_name(name).get());
    if (expose_hidden_) {
      exposed_outputs_.push_back(unrolled_net_->blob_by_name(name + "_exposed").get());
    }
  }
  for (const std::string& name : output_names) {
    outputs_.push_back(unrolled_net_->blob_by_name(name).get());
  }
  const std::vector<std::string>& layer_names = unrolled_net_->layer_names();
  last_layer_index_ = static_cast<int>(
      std::find(layer_names.begin(), layer_names.end(), output_names[0] + "_pseudoloss") -
      layer_names.begin() - 1);

  // The parameters are the unrolled net's own (not those shared across steps), in the order
  // Caffe lists them.
  this->blobs_.clear();
  const auto& params = unrolled_net_->params();
  for (int arena_id : unrolled_net_->arena_ids_in_caffe_order()) {
    this->blobs_.push_back(params[unrolled_net_->learnable_param_ids()[arena_id]]);
  }
  this->param_propagate_down_.assign(this->blobs_.size(), true);
}

template <typename Dtype>
void RecurrentLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  CheckBottoms(bottom);
  x_input_->ReshapeLike(*bottom[0]);
  cont_input_->ReshapeLike(*bottom[1]);
  if (static_input_) x_static_input_->ReshapeLike(*bottom[2]);
  const std::vector<BlobShape> recur_shapes = RecurrentInputShapes();
  for (std::size_t i = 0; i < recur_inputs_.size(); ++i) recur_inputs_[i]->Reshape(recur_shapes[i]);
  if (expose_hidden_) {
    const int offset = 2 + (static_input_ ? 1 : 0);
    for (std::size_t j = 0; j < recur_inputs_.size(); ++j) {
      DOPPIO_ENSURE(bottom[offset + j]->shape() == recur_inputs_[j]->shape())
          << this->Describe() << ": the initial recurrent state '" << RecurrentInputBlobNames()[j]
          << "' (bottom " << offset + j << ") has shape " << bottom[offset + j]->shape_string()
          << "; expected " << recur_inputs_[j]->shape_string();
    }
  }
  unrolled_net_->Reshape();
  for (std::size_t i = 0; i < outputs_.size(); ++i) top[i]->ReshapeLike(*outputs_[i]);
  if (expose_hidden_) {
    for (std::size_t j = 0; j < recur_outputs_.size(); ++j) {
      top[outputs_.size() + j]->ReshapeLike(*recur_outputs_[j]);
    }
  }
}

template <typename Dtype>
void RecurrentLayer<Dtype>::PrepareUnrolledNet() {
  const std::shared_ptr<GpuContext> device =
      this->mode() == Mode::GPU ? this->gpu_context() : nullptr;
  if (unrolled_net_->gpu_context() != device) unrolled_net_->SetGpu(device);
  // The net around this layer may have moved the weights (into its arena, or to share them
  // with another net's): the steps that share a weight follow.
  unrolled_net_->ShareWeights();
}

template <typename Dtype>
void RecurrentLayer<Dtype>::ZeroDiff(Blob<Dtype>* blob) {
#ifdef DOPPIO_WITH_CUDA
  if (this->mode() == Mode::GPU) {
    GpuContext& gpu = *this->gpu_context();
    gpu_set(gpu, blob->count(), Dtype(0), blob->mutable_gpu_diff(gpu));
    return;
  }
#endif
  cpu_set(blob->count(), Dtype(0), blob->mutable_cpu_diff());
}

template <typename Dtype>
void RecurrentLayer<Dtype>::RunForward(const BlobVec& bottom, const BlobVec& top) {
  PrepareUnrolledNet();
  x_input_->CopyFrom(*bottom[0]);
  cont_input_->CopyFrom(*bottom[1]);
  if (static_input_) x_static_input_->CopyFrom(*bottom[2]);
  const int offset = 2 + (static_input_ ? 1 : 0);
  for (std::size_t j = 0; j < recur_inputs_.size(); ++j) {
    // The given initial state, or the last Forward's final state.
    recur_inputs_[j]->CopyFrom(expose_hidden_ ? *bottom[offset + j] : *recur_outputs_[j]);
  }
  unrolled_net_->ForwardFromTo(0, last_layer_index_);
  for (std::size_t i = 0; i < outputs_.size(); ++i) top[i]->CopyFrom(*outputs_[i]);
  if (expose_hidden_) {
    for (std::size_t j = 0; j < recur_outputs_.size(); ++j) {
      top[outputs_.size() + j]->CopyFrom(*recur_outputs_[j]);
    }
  }
}

template <typename Dtype>
void RecurrentLayer<Dtype>::RunBackward(const BlobVec& top, const std::vector<bool>& propagate_down,
                                        const BlobVec& bottom) {
  DOPPIO_ENSURE(!propagate_down[1])
      << this->Describe()
      << " cannot backpropagate to the sequence continuation markers (bottom 1)";
  PrepareUnrolledNet();
  for (std::size_t i = 0; i < outputs_.size(); ++i) outputs_[i]->CopyFrom(*top[i], true);
  for (std::size_t j = 0; j < recur_outputs_.size(); ++j) {
    if (expose_hidden_) {
      exposed_outputs_[j]->CopyFrom(*top[outputs_.size() + j], true);
    } else {
      // Nothing after the last step depends on its state within this batch.
      ZeroDiff(recur_outputs_[j]);
    }
  }
  unrolled_net_->BackwardFromTo(last_layer_index_, 0);
  if (propagate_down[0]) bottom[0]->CopyFrom(*x_input_, true);
  if (static_input_ && propagate_down[2]) bottom[2]->CopyFrom(*x_static_input_, true);
  if (expose_hidden_) {
    const int offset = 2 + (static_input_ ? 1 : 0);
    for (std::size_t j = 0; j < recur_inputs_.size(); ++j) {
      if (propagate_down[offset + j]) bottom[offset + j]->CopyFrom(*recur_inputs_[j], true);
    }
  }
}

DOPPIO_INSTANTIATE_CLASS(RecurrentLayer);

}  // namespace doppio
