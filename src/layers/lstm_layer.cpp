#include "doppio/layers/lstm_layer.hpp"

#include "doppio/core/layer_registry.hpp"

namespace doppio {

template <typename Dtype>
std::vector<BlobShape> LSTMLayer<Dtype>::RecurrentInputShapes() const {
  BlobShape shape;
  shape.add_dim(1);
  shape.add_dim(this->N_);
  shape.add_dim(this->num_output());
  return {shape, shape};
}

template <typename Dtype>
void LSTMLayer<Dtype>::FillUnrolledNet(NetParameter* net) const {
  // The inner products feed the four gates: 4 x num_output inputs.
  const int gates = 4 * this->num_output();
  const int T = this->T_;

  LayerParameter* cont_slice = this->AddUnrolledLayer(net, "cont_slice", "Slice", {"cont"}, {});
  cont_slice->mutable_slice_param()->set_axis(0);
  // W_xc_x = W_xc x + b_c for all steps at once.
  LayerParameter* x_transform =
      this->AddUnrolledLayer(net, "x_transform", "InnerProduct", {"x"}, {"W_xc_x"});
  this->MakeInnerProduct(x_transform, gates, 2, "W_xc", "b_c");
  x_transform->add_propagate_down(true);
  if (this->static_input_) {
    LayerParameter* static_transform = this->AddUnrolledLayer(
        net, "W_xc_x_static", "InnerProduct", {"x_static"}, {"W_xc_x_static_preshape"});
    this->MakeInnerProduct(static_transform, gates, 1, "W_xc_static", "");
    static_transform->add_propagate_down(true);
    LayerParameter* reshape = this->AddUnrolledLayer(net, "W_xc_x_static_reshape", "Reshape",
                                                     {"W_xc_x_static_preshape"}, {"W_xc_x_static"});
    BlobShape* shape = reshape->mutable_reshape_param()->mutable_shape();
    shape->add_dim(1);
    shape->add_dim(-1);
    shape->add_dim(gates);
  }
  LayerParameter* x_slice = this->AddUnrolledLayer(net, "W_xc_x_slice", "Slice", {"W_xc_x"}, {});
  x_slice->mutable_slice_param()->set_axis(0);
  LayerParameter concat;
  concat.set_name("h_concat");
  concat.set_type("Concat");
  concat.add_top("h");
  concat.mutable_concat_param()->set_axis(0);

  for (int t = 1; t <= T; ++t) {
    const std::string tm1 = std::to_string(t - 1);
    const std::string ts = std::to_string(t);
    cont_slice->add_top("cont_" + ts);
    x_slice->add_top("W_xc_x_" + ts);
    // h_conted_{t-1} = cont_t h_{t-1}: the state is dropped where a sequence starts.
    this->AddUnrolledLayer(net, "h_conted_" + tm1, "Scale", {"h_" + tm1, "cont_" + ts},
                           {"h_conted_" + tm1})
        ->mutable_scale_param()
        ->set_axis(0);
    this->MakeInnerProduct(this->AddUnrolledLayer(net, "transform_" + ts, "InnerProduct",
                                                  {"h_conted_" + tm1}, {"W_hc_h_" + tm1}),
                           gates, 2, "W_hc", "");
    std::vector<std::string> sum = {"W_hc_h_" + tm1, "W_xc_x_" + ts};
    if (this->static_input_) sum.push_back("W_xc_x_static");
    this->AddUnrolledLayer(net, "gate_input_" + ts, "Eltwise", sum, {"gate_input_" + ts})
        ->mutable_eltwise_param()
        ->set_operation(EltwiseParameter::SUM);
    this->AddUnrolledLayer(net, "unit_" + ts, "LSTMUnit",
                           {"c_" + tm1, "gate_input_" + ts, "cont_" + ts}, {"c_" + ts, "h_" + ts});
    concat.add_bottom("h_" + ts);
  }
  this->AddUnrolledLayer(net, "c_T_copy", "Split", {"c_" + std::to_string(T)}, {"c_T"});
  *net->add_layer() = concat;
}

DOPPIO_INSTANTIATE_CLASS(LSTMLayer);
REGISTER_LAYER_CLASS(LSTM);

}  // namespace doppio
