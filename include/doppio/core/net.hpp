#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "doppio/core/blob.hpp"
#include "doppio/core/common.hpp"
#include "doppio/core/layer.hpp"

namespace doppio {

// A directed acyclic graph of layers built from a NetParameter for one phase.
//
// Set-up filters layers by include/exclude rules against the NetState, inserts Split layers
// where a blob feeds several layers, wires in-place layers, shares parameters by name,
// decides which layers need backward, and lays the learnable parameters out in one
// contiguous arena (data and diff) in the order backward finishes them, so a gradient
// bucket is a contiguous slice.
template <typename Dtype>
class Net {
 public:
  // Called with a layer's index just before or just after its Forward or its Backward: the
  // parallel gradient sync hooks in after backward, timelines after forward, and pycaffe's
  // before_forward / after_backward callbacks everywhere.
  using BackwardCallback = std::function<void(int layer_id)>;
  using ForwardCallback = std::function<void(int layer_id)>;

  // seed initialises the fillers and every layer's random stream (layer i gets its own).
  // With a GPU context the net runs on that GPU (and cuDNN engines are chosen where they
  // apply); without one, on the CPU. Every layer gets `cpu` before its SetUp.
  explicit Net(const NetParameter& param, std::uint64_t seed = 1701,
               std::shared_ptr<GpuContext> gpu = nullptr, const CpuOptions& cpu = CpuOptions());
  Net(const Net&) = delete;
  Net& operator=(const Net&) = delete;

  // Forward through every layer; returns the output blobs and sets *loss when given.
  const std::vector<Blob<Dtype>*>& Forward(Dtype* loss = nullptr);
  Dtype ForwardFromTo(int start, int end);
  void Backward();
  void BackwardFromTo(int start, int end);
  Dtype ForwardBackward();
  // Loss scaling (mixed precision): Backward starts from the loss weights times `scale`, so
  // every gradient comes out `scale` times the loss's; Forward's loss is unchanged. 1: off.
  void set_loss_scale(Dtype scale) { loss_scale_ = scale; }
  Dtype loss_scale() const { return loss_scale_; }
  // Re-propagates shapes after an input blob changed shape.
  void Reshape();

  void ClearParamDiffs();
  // data -= diff for every learnable parameter (one pass over the arena). Returns false when
  // a weight came out NaN or infinite (a non-finite step, or one that overflowed), checked in
  // that same pass; the weights are updated either way.
  bool Update();

  // Points every shared parameter at its owner's data and diff again. A net run inside a layer
  // (RNN, LSTM) calls it before each use: the net around that layer rebinds the owners' buffers
  // into its own arena, which the sharers inside would not otherwise see.
  void ShareWeights();

  // Copies weights layer by layer, by name, from a trained net (Caffe's fine-tuning rule:
  // layers absent from `param` keep their values). As in Caffe, each layer of `param` goes to
  // the FIRST layer of this net with its name: a later layer of the same name keeps its
  // values, and two layers of one name in `param` both write that first layer. A shape
  // mismatch throws Error naming the layer, the blob index and both shapes.
  void CopyTrainedLayersFrom(const NetParameter& param);
  void CopyTrainedLayersFromFile(const std::string& path);
  // For weights this very net wrote (a snapshot): the k-th layer of a name in `param` goes to
  // the k-th layer of that name here, so layers that share a name each get their own back.
  void RestoreTrainedLayersFrom(const NetParameter& param);
  // Shares the weights of `other`'s layers by name, by Caffe's rule of CopyTrainedLayersFrom.
  void ShareTrainedLayersWith(const Net& other);
  void ToProto(NetParameter* param, bool write_diff = false) const;

  const std::string& name() const { return name_; }
  Phase phase() const { return phase_; }
  Mode mode() const { return gpu_ ? Mode::GPU : Mode::CPU; }
  const std::shared_ptr<GpuContext>& gpu_context() const { return gpu_; }
  const CpuOptions& cpu_options() const { return cpu_options_; }
  // Moves every layer to `gpu` (null: the CPU). Engines stay those chosen at construction.
  void SetGpu(std::shared_ptr<GpuContext> gpu);
  const std::vector<std::string>& layer_names() const { return layer_names_; }
  // The layer's name, or "name#index" where other layers share the name: for timings, traces
  // and messages that must tell those layers apart.
  std::string layer_label(int layer_id) const;
  const std::vector<std::string>& blob_names() const { return blob_names_; }
  const std::vector<std::shared_ptr<Blob<Dtype>>>& blobs() const { return blobs_; }
  const std::vector<std::shared_ptr<Layer<Dtype>>>& layers() const { return layers_; }
  // The sum of its layers' input_stats (those that read records).
  InputStats input_stats() const;
  const std::vector<std::vector<Blob<Dtype>*>>& bottom_vecs() const { return bottom_vecs_; }
  const std::vector<std::vector<Blob<Dtype>*>>& top_vecs() const { return top_vecs_; }
  const std::vector<std::vector<int>>& bottom_id_vecs() const { return bottom_id_vecs_; }
  const std::vector<std::vector<int>>& top_id_vecs() const { return top_id_vecs_; }
  const std::vector<std::vector<bool>>& bottom_need_backward() const {
    return bottom_need_backward_;
  }
  const std::vector<bool>& layer_need_backward() const { return layer_need_backward_; }
  const std::vector<Dtype>& blob_loss_weights() const { return blob_loss_weights_; }

  // Every parameter blob of every layer (shared ones repeated).
  const std::vector<std::shared_ptr<Blob<Dtype>>>& params() const { return params_; }
  // The owners only: what the solver updates. In arena order: by the layer whose backward
  // makes each gradient final, latest layer first (the order backward finishes them), then
  // in net order.
  const std::vector<Blob<Dtype>*>& learnable_params() const { return learnable_params_; }
  // The parameter order: for each learnable param (arena order), its index in params().
  const std::vector<int>& learnable_param_ids() const { return learnable_param_ids_; }
  // Caffe's learnable-parameter order, in which files index parameters (.solverstate
  // history): entry c is the arena index of Caffe's c-th learnable param, Caffe listing the
  // owners in the order the layers and their blobs appear.
  const std::vector<int>& arena_ids_in_caffe_order() const { return arena_ids_in_caffe_order_; }
  // For each entry of params(): its layer and its index among that layer's blobs.
  const std::vector<std::pair<int, int>>& param_layer_indices() const {
    return param_layer_indices_;
  }
  // For each entry of params(): its ParamSpec name, or its index where it has none.
  const std::vector<std::string>& param_display_names() const { return param_display_names_; }
  const std::vector<float>& params_lr() const { return params_lr_; }
  const std::vector<float>& params_weight_decay() const { return params_weight_decay_; }
  // For each learnable param: the layer whose backward makes its gradient final.
  const std::vector<int>& learnable_param_last_layer() const { return learnable_param_layer_; }
  // Element offset of each learnable param inside the arena.
  const std::vector<std::size_t>& learnable_param_offsets() const { return arena_offsets_; }
  std::size_t arena_count() const { return arena_count_; }
  Dtype* mutable_arena_data();
  Dtype* mutable_arena_diff();
  const Dtype* arena_data() const;
  const Dtype* arena_diff() const;
#ifdef DOPPIO_WITH_CUDA
  // The arena on the net's GPU (GPU mode only).
  Dtype* mutable_arena_gpu_data();
  Dtype* mutable_arena_gpu_diff();
  const Dtype* arena_gpu_data() const;
  const Dtype* arena_gpu_diff() const;
#endif

  const std::vector<Blob<Dtype>*>& input_blobs() const { return net_input_blobs_; }
  const std::vector<Blob<Dtype>*>& output_blobs() const { return net_output_blobs_; }
  const std::vector<int>& output_blob_indices() const { return net_output_blob_indices_; }

  bool has_blob(const std::string& name) const { return blob_index_.count(name) > 0; }
  std::shared_ptr<Blob<Dtype>> blob_by_name(const std::string& name) const;
  bool has_layer(const std::string& name) const { return layer_index_.count(name) > 0; }
  // Where layers share a name, the last of them (as in Caffe).
  std::shared_ptr<Layer<Dtype>> layer_by_name(const std::string& name) const;

  // Caffe's debug_info (core/debug_info.hpp): per-layer data and diff magnitudes in the log
  // during Forward, Backward and Update. On from the NetParameter's debug_info; the solver
  // also turns it on for its display iterations when the solver's debug_info is set.
  bool debug_info() const { return debug_info_; }
  void set_debug_info(bool on) { debug_info_ = on; }

  void add_before_backward(BackwardCallback callback) {
    before_backward_.push_back(std::move(callback));
  }
  void add_after_backward(BackwardCallback callback) {
    after_backward_.push_back(std::move(callback));
  }
  void add_before_forward(ForwardCallback callback) {
    before_forward_.push_back(std::move(callback));
  }
  void add_after_forward(ForwardCallback callback) {
    after_forward_.push_back(std::move(callback));
  }

  // Bytes of the activations' buffers, each once however many blobs share it (in-place
  // layers, Split, ShareActivationMemory): data, and diff in a TRAIN net that runs backward.
  // And of the parameter arena, data and diff.
  std::size_t activation_bytes() const;
  std::size_t parameter_bytes() const;
  // How many layers read the copy of their input that the layer before them keeps for
  // Backward, instead of keeping one of their own (Scale after BatchNorm, both in place).
  int shared_kept_copies() const { return shared_kept_copies_; }

  // Returns the layers of `param` that apply to its state (include/exclude rules).
  static NetParameter FilterNet(const NetParameter& param);
  static bool StateMeetsRule(const NetState& state, const NetStateRule& rule,
                             const std::string& layer_name);

 private:
  void Init(const NetParameter& param);
  void AppendTop(const NetParameter& param, int layer_id, int top_id,
                 std::map<std::string, int>* available_blobs);
  int AppendBottom(const NetParameter& param, int layer_id, int bottom_id,
                   std::map<std::string, int>* available_blobs);
  void AppendParam(const NetParameter& param, int layer_id, int param_id);
  void DecideBackward(const NetParameter& param);
  void BuildArena();
  void ShareKeptCopies();
  // Finds the layers that keep their input by exchange (Layer::input_exchange).
  void CollectInputExchanges();
  void WarnSharedLayerNames() const;
  // Logs which engine runs each layer (one line per engine), and, where not every layer is
  // fp32, the precision each runs in (one line per precision).
  void LogEngines() const;
  void CopyLayerBlobs(int layer_id, const google::protobuf::RepeatedPtrField<BlobProto>& blobs);

  std::string name_;
  Phase phase_;
  std::uint64_t seed_;
  // Shared by every layer: the reading layer sets it, the random layers key on it.
  std::shared_ptr<BatchPosition> batch_position_ = std::make_shared<BatchPosition>();
  std::shared_ptr<GpuContext> gpu_;
  CpuOptions cpu_options_;
  std::vector<std::shared_ptr<Layer<Dtype>>> layers_;
  // Per layer: the exchange ForwardFromTo performs on its blob before its Forward, or null.
  std::vector<InputExchange<Dtype>*> input_exchanges_;
  std::vector<std::string> layer_names_;
  std::map<std::string, int> layer_index_;
  std::vector<bool> layer_need_backward_;
  int shared_kept_copies_ = 0;
  std::vector<std::shared_ptr<Blob<Dtype>>> blobs_;
  std::vector<std::string> blob_names_;
  std::map<std::string, int> blob_index_;
  std::vector<bool> blob_need_backward_;
  std::vector<std::vector<Blob<Dtype>*>> bottom_vecs_;
  std::vector<std::vector<int>> bottom_id_vecs_;
  std::vector<std::vector<bool>> bottom_need_backward_;
  std::vector<std::vector<Blob<Dtype>*>> top_vecs_;
  std::vector<std::vector<int>> top_id_vecs_;
  std::vector<Dtype> blob_loss_weights_;
  std::vector<std::vector<int>> param_id_vecs_;
  std::vector<int> param_owners_;
  std::vector<std::string> param_display_names_;
  std::vector<std::pair<int, int>> param_layer_indices_;
  std::map<std::string, int> param_names_index_;
  std::vector<Blob<Dtype>*> net_input_blobs_;
  std::vector<Blob<Dtype>*> net_output_blobs_;
  std::vector<int> net_output_blob_indices_;
  std::vector<std::shared_ptr<Blob<Dtype>>> params_;
  std::vector<Blob<Dtype>*> learnable_params_;
  std::vector<int> learnable_param_ids_;
  std::vector<int> learnable_param_layer_;
  std::vector<int> arena_ids_in_caffe_order_;
  std::vector<float> params_lr_;
  std::vector<float> params_weight_decay_;
  std::vector<std::size_t> arena_offsets_;
  std::size_t arena_count_ = 0;
  std::shared_ptr<SyncedMemory> arena_data_;
  std::shared_ptr<SyncedMemory> arena_diff_;
  std::vector<BackwardCallback> before_backward_;
  std::vector<BackwardCallback> after_backward_;
  std::vector<ForwardCallback> before_forward_;
  std::vector<ForwardCallback> after_forward_;
  bool debug_info_ = false;
  Dtype loss_scale_ = 1;
  // Sets the diffs of the loss tops, which the loss layers' Backward reads, to their loss
  // weights times `scale`.
  void ScaleLossWeights(Dtype scale);
};

}  // namespace doppio
