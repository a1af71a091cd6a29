#include "doppio/layers/rnn_layer.hpp"

#include "doppio/core/layer_registry.hpp"

namespace doppio {

template <typename Dtype>
std::vector<BlobShape> RNNLayer<Dtype>::RecurrentInputShapes() const {
  BlobShape shape;
  shape.add_dim(1);
  shape.add_dim(this->N_);
  shape.add_dim(this->num_output());
  return {shape};
}

template <typename Dtype>
void RNNLayer<Dtype>::FillUnrolledNet(NetParameter* net) const {
  const int T = this->T_;

  LayerParameter* cont_slice = this->AddUnrolledLayer(net, "cont_slice", "Slice", {"cont"}, {});
  cont_slice->mutable_slice_param()->set_axis(0);
  // W_xh_x = W_xh x + b_h for all steps at once.
  LayerParameter* x_transform =
      this->AddUnrolledLayer(net, "x_transform", "InnerProduct", {"x"}, {"W_xh_x"});
  this->MakeInnerProduct(x_transform, this->num_output(), 2, "W_xh", "b_h");
  x_transform->add_propagate_down(true);
  if (this->static_input_) {
    LayerParameter* static_transform = this->AddUnrolledLayer(
        net, "W_xh_x_static", "InnerProduct", {"x_static"}, {"W_xh_x_static_preshape"});
    this->MakeInnerProduct(static_transform, this->num_output(), 1, "W_xh_static", "");
    static_transform->add_propagate_down(true);
    LayerParameter* reshape = this->AddUnrolledLayer(net, "W_xh_x_static_reshape", "Reshape",
                                                     {"W_xh_x_static_preshape"}, {"W_xh_x_static"});
    BlobShape* shape = reshape->mutable_reshape_param()->mutable_shape();
    shape->add_dim(1);
    shape->add_dim(-1);
    shape->add_dim(this->num_output());
  }
  LayerParameter* x_slice = this->AddUnrolledLayer(net, "W_xh_x_slice", "Slice", {"W_xh_x"}, {});
  x_slice->mutable_slice_param()->set_axis(0);
  LayerParameter concat;
  concat.set_name("o_concat");
  concat.set_type("Concat");
  concat.add_top("o");
  concat.mutable_concat_param()->set_axis(0);

  for (int t = 1; t <= T; ++t) {
    const std::string tm1 = std::to_string(t - 1);
    const std::string ts = std::to_string(t);
    cont_slice->add_top("cont_" + ts);
    x_slice->add_top("W_xh_x_" + ts);
    // h_conted_{t-1} = cont_t h_{t-1}: the state is dropped where a sequence starts.
    this->AddUnrolledLayer(net, "h_conted_" + tm1, "Scale", {"h_" + tm1, "cont_" + ts},
                           {"h_conted_" + tm1})
        ->mutable_scale_param()
        ->set_axis(0);
    this->MakeInnerProduct(this->AddUnrolledLayer(net, "W_hh_h_" + tm1, "InnerProduct",
                                                  {"h_conted_" + tm1}, {"W_hh_h_" + tm1}),
                           this->num_output(), 2, "W_hh", "");
    std::vector<std::string> sum = {"W_hh_h_" + tm1, "W_xh_x_" + ts};
    if (this->static_input_) sum.push_back("W_xh_x_static");
    this->AddUnrolledLayer(net, "h_input_sum_" + ts, "Eltwise", sum, {"h_neuron_input_" + ts})
        ->mutable_eltwise_param()
        ->set_operation(EltwiseParameter::SUM);
    this->AddUnrolledLayer(net, "h_neuron_" + ts, "TanH", {"h_neuron_input_" + ts}, {"h_" + ts});
    this->MakeInnerProduct(
        this->AddUnrolledLayer(net, "W_ho_h_" + ts, "InnerProduct", {"h_" + ts}, {"W_ho_h_" + ts}),
        this->num_output(), 2, "W_ho", "b_o");
    this->AddUnrolledLayer(net, "o_neuron_" + ts, "TanH", {"W_ho_h_" + ts}, {"o_" + ts});
    concat.add_bottom("o_" + ts);
  }
  *net->add_layer() = concat;
}

DOPPIO_INSTANTIATE_CLASS(RNNLayer);
REGISTER_LAYER_CLASS(RNN);

}  // namespace doppio
