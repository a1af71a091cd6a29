#pragma once

#include <memory>
#include <string>
#include <vector>

#include "doppio/core/layer.hpp"
#include "doppio/core/net.hpp"

namespace doppio {

// Caffe's Recurrent semantics, shared by RNN and LSTM: the layer runs a net unrolled over the
// T time steps of its input, built by the architecture (FillUnrolledNet) from layers Doppio
// already has, with one copy of each weight shared by every step.
//
// Bottoms: x (T, N, ...), the sequence-continuation markers cont (T, N) (0 where a sequence
// starts: the step then ignores the state before it), optionally a static input (N, ...)
// seen at every step, and with recurrent_param.expose_hidden the initial recurrent state (the
// blobs RecurrentInputBlobNames names, each (1, N, num_output)). Tops: the outputs (T, N,
// num_output), and with expose_hidden the recurrent state after the last step. Without
// expose_hidden the state after the last step is carried over as the initial state of the
// next Forward (where cont is 0 at the first step, it has no effect).
//
// The parameter blobs are those of the unrolled net, in Caffe's order, so Caffe's weights
// load. cont takes no gradient. Unlike Caffe, which leaves them untouched, the exposed initial
// state receives its gradient and the exposed final state passes its gradient back.
template <typename Dtype>
class RecurrentLayer : public Layer<Dtype> {
 public:
  using BlobVec = typename Layer<Dtype>::BlobVec;

  explicit RecurrentLayer(const LayerParameter& param) : Layer<Dtype>(param) {}
  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

  int MinBottomBlobs() const override;
  int MaxBottomBlobs() const override { return MinBottomBlobs() + 1; }
  int ExactNumTopBlobs() const override;
  bool AllowForceBackward(int bottom_index) const override { return bottom_index != 1; }

  // The net the layer runs (its layers are named after this one).
  const Net<Dtype>& unrolled_net() const { return *unrolled_net_; }

 protected:
  // The architecture's layers over T_ steps, reading the blobs "x", "cont" (T_, N_),
  // "x_static" (when static_input_) and the recurrent inputs, and producing the outputs and
  // the recurrent outputs. Its layers are added to `net`, which holds the inputs already.
  virtual void FillUnrolledNet(NetParameter* net) const = 0;
  // The initial recurrent state's blobs, their shapes, the final state's blobs (paired with
  // the initial ones), and the outputs (one top each).
  virtual std::vector<std::string> RecurrentInputBlobNames() const = 0;
  virtual std::vector<BlobShape> RecurrentInputShapes() const = 0;
  virtual std::vector<std::string> RecurrentOutputBlobNames() const = 0;
  virtual std::vector<std::string> OutputBlobNames() const = 0;

  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override { RunForward(bottom, top); }
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    RunBackward(top, propagate_down, bottom);
  }
#ifdef DOPPIO_WITH_CUDA
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#endif

  int num_output() const {
    return static_cast<int>(this->layer_param_.recurrent_param().num_output());
  }
  // For FillUnrolledNet: appends a layer of `type` named `name` to `net`.
  static LayerParameter* AddUnrolledLayer(NetParameter* net, const std::string& name,
                                          const std::string& type,
                                          const std::vector<std::string>& bottoms,
                                          const std::vector<std::string>& tops);
  // Makes `layer` an inner product to `outputs` reducing the axes from `axis` on, with
  // recurrent_param's fillers, its weight shared under `weight` and, when `bias` is not
  // empty, a bias shared under `bias`.
  void MakeInnerProduct(LayerParameter* layer, int outputs, int axis, const std::string& weight,
                        const std::string& bias) const;

  int T_ = 0;  // time steps
  int N_ = 0;  // independent streams
  bool static_input_ = false;
  bool expose_hidden_ = false;

 private:
  void RunForward(const BlobVec& bottom, const BlobVec& top);
  void RunBackward(const BlobVec& top, const std::vector<bool>& propagate_down,
                   const BlobVec& bottom);
  // Checks the bottoms' shapes against T_ (fixed at set-up) and sets N_.
  void CheckBottoms(const BlobVec& bottom);
  // Puts the unrolled net on this layer's device and its shared weights on their owners'.
  void PrepareUnrolledNet();
  void ZeroDiff(Blob<Dtype>* blob);

  std::unique_ptr<Net<Dtype>> unrolled_net_;
  int last_layer_index_ = 0;  // the last layer run (the pseudo-losses after it are not)
  Blob<Dtype>* x_input_ = nullptr;
  Blob<Dtype>* cont_input_ = nullptr;
  Blob<Dtype>* x_static_input_ = nullptr;
  std::vector<Blob<Dtype>*> recur_inputs_;
  std::vector<Blob<Dtype>*> recur_outputs_;
  // With expose_hidden: leaf copies of the recurrent outputs, through which the gradient of
  // the exposed final state enters the unrolled net.
  std::vector<Blob<Dtype>*> exposed_outputs_;
  std::vector<Blob<Dtype>*> outputs_;
};

}  // namespace doppio
