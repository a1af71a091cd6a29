#include "doppio/layers/dummy_data_layer.hpp"

#include <climits>
#include <string>

#include "doppio/core/layer_registry.hpp"

namespace doppio {

namespace {
// Reads a repeated legacy dimension (num, channels, ...): one value for all tops or one per
// top.
template <typename Repeated>
long long LegacyDim(const Repeated& values, int top_index, int num_top, const std::string& field,
                    const std::string& who) {
  DOPPIO_ENSURE(values.size() == 1 || values.size() == num_top)
      << who << ": dummy_data_param." << field << " has " << values.size() << " value(s) for "
      << num_top << " top(s); give one for all tops or one per top";
  return values.size() == 1 ? values.Get(0) : values.Get(top_index);
}
}  // namespace

template <typename Dtype>
void DummyDataLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const DummyDataParameter& param = this->layer_param_.dummy_data_param();
  const std::string who = this->Describe();
  const int num_top = static_cast<int>(top.size());
  const int num_fillers = param.data_filler_size();
  DOPPIO_ENSURE(num_fillers == 0 || num_fillers == 1 || num_fillers == num_top)
      << who << " has " << num_fillers << " dummy_data_param.data_filler entries for " << num_top
      << " top(s); give none (constant 0), one for all tops or one per top";
  const bool legacy = param.num_size() > 0 || param.channels_size() > 0 ||
                      param.height_size() > 0 || param.width_size() > 0;
  if (legacy) {
    DOPPIO_ENSURE(param.shape_size() == 0)
        << who << " gives both dummy_data_param.shape and the legacy num/channels/height/width"
        << "; use one or the other";
  } else {
    DOPPIO_ENSURE(param.shape_size() == 1 || param.shape_size() == num_top)
        << who << " has " << param.shape_size() << " dummy_data_param.shape entries for " << num_top
        << " top(s); give one shape for all tops or one per top";
  }

  for (int t = 0; t < num_top; ++t) {
    std::vector<long long> dims;
    std::string field;
    if (legacy) {
      // The legacy fields always make a 4-d shape, so each must be given.
      dims = {LegacyDim(param.num(), t, num_top, "num", who),
              LegacyDim(param.channels(), t, num_top, "channels", who),
              LegacyDim(param.height(), t, num_top, "height", who),
              LegacyDim(param.width(), t, num_top, "width", who)};
      field = "num/channels/height/width";
    } else {
      const BlobShape& shape = param.shape(param.shape_size() == 1 ? 0 : t);
      for (int d = 0; d < shape.dim_size(); ++d) dims.push_back(shape.dim(d));
      field = "shape";
    }
    std::vector<int> int_dims;
    for (std::size_t d = 0; d < dims.size(); ++d) {
      DOPPIO_ENSURE(dims[d] > 0 && dims[d] <= INT_MAX)
          << who << ": dummy_data_param." << field << " for top " << t << " has dimension " << d
          << " = " << dims[d] << "; dimensions must be in [1, " << INT_MAX << "]";
      int_dims.push_back(static_cast<int>(dims[d]));
    }
    try {
      top[t]->Reshape(int_dims);
    } catch (const Error& e) {  // e.g. a count beyond INT_MAX
      DOPPIO_FAIL() << this->Describe() << ", top " << t << ": " << e.what();
    }
  }

  fillers_.clear();
  refill_.clear();
  std::shared_ptr<Filler<Dtype>> shared;
  for (int t = 0; t < num_top; ++t) {
    FillerParameter filler_param;  // constant 0 when none is given
    if (num_fillers > 0) filler_param = param.data_filler(num_fillers == 1 ? 0 : t);
    if (num_fillers != 1 || !shared) {
      try {
        shared = GetFiller<Dtype>(filler_param);
      } catch (const Error& e) {
        DOPPIO_FAIL() << who << ": dummy_data_param.data_filler: " << e.what();
      }
    }
    fillers_.push_back(shared);
    refill_.push_back(filler_param.type() != "constant");
    if (!refill_.back()) fillers_.back()->Fill(top[t], this->rng());
  }
}

template <typename Dtype>
void DummyDataLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  for (std::size_t t = 0; t < top.size(); ++t) {
    if (refill_[t]) fillers_[t]->Fill(top[t], this->rng());
  }
}

DOPPIO_INSTANTIATE_CLASS(DummyDataLayer);
REGISTER_LAYER_CLASS(DummyData);

}  // namespace doppio
