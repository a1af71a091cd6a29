#include "doppio/layers/hdf5_output_layer.hpp"

#include <glog/logging.h>

#include "doppio/core/layer_registry.hpp"

namespace doppio {

template <typename Dtype>
void HDF5OutputLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const std::string who = this->Describe();
  const HDF5OutputParameter& param = this->layer_param_.hdf5_output_param();
  DOPPIO_ENSURE(!param.file_name().empty())
      << who << ": hdf5_output_param.file_name (the HDF5 file to write) is not set";
  try {
    file_ = std::make_unique<Hdf5Writer>(param.file_name());
  } catch (const Error& error) {
    throw Error(who + ": hdf5_output_param.file_name: " + error.what());
  }
  LOG(INFO) << who << ": writing '" << this->layer_param_.bottom(0) << "' and '"
            << this->layer_param_.bottom(1) << "' to " << param.file_name();
}

template <typename Dtype>
void HDF5OutputLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  DOPPIO_ENSURE(bottom[0]->num_axes() >= 1 && bottom[1]->num_axes() >= 1 &&
                bottom[0]->shape(0) == bottom[1]->shape(0))
      << this->Describe() << ": the bottoms must hold as many samples (first axis), got "
      << bottom[0]->shape_string() << " and " << bottom[1]->shape_string();
  try {
    file_->Append("data", bottom[0]->shape(), bottom[0]->cpu_data());
    file_->Append("label", bottom[1]->shape(), bottom[1]->cpu_data());
    file_->Flush();
  } catch (const Error& error) {
    throw Error(this->Describe() + ": " + error.what());
  }
}

DOPPIO_INSTANTIATE_CLASS(HDF5OutputLayer);
REGISTER_LAYER_CLASS(HDF5Output);

}  // namespace doppio
