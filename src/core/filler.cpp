#include "doppio/core/filler.hpp"

#include <cmath>

#include "doppio/util/math_functions.hpp"

namespace doppio {

namespace {

template <typename Dtype>
int FanIn(const Blob<Dtype>& blob) {
  return blob.num_axes() > 0 && blob.shape(0) > 0 ? blob.count() / blob.shape(0) : 1;
}

template <typename Dtype>
int FanOut(const Blob<Dtype>& blob) {
  return blob.num_axes() > 1 && blob.shape(1) > 0 ? blob.count() / blob.shape(1) : 1;
}

template <typename Dtype>
Dtype VarianceScale(const FillerParameter& param, const Blob<Dtype>& blob) {
  const Dtype fan_in = FanIn(blob);
  const Dtype fan_out = FanOut(blob);
  switch (param.variance_norm()) {
    case FillerParameter::FAN_OUT:
      return fan_out;
    case FillerParameter::AVERAGE:
      return (fan_in + fan_out) / Dtype(2);
    default:
      return fan_in;
  }
}

template <typename Dtype>
class ConstantFiller : public Filler<Dtype> {
 public:
  using Filler<Dtype>::Filler;
  void Fill(Blob<Dtype>* blob, Rng&) override {
    cpu_set(blob->count(), Dtype(this->param_.value()), blob->mutable_cpu_data());
  }
};

template <typename Dtype>
class UniformFiller : public Filler<Dtype> {
 public:
  using Filler<Dtype>::Filler;
  void Fill(Blob<Dtype>* blob, Rng& rng) override {
    DOPPIO_ENSURE(this->param_.min() <= this->param_.max())
        << "uniform filler: min " << this->param_.min() << " exceeds max " << this->param_.max();
    rng_uniform<Dtype>(blob->count(), this->param_.min(), this->param_.max(), rng,
                       blob->mutable_cpu_data());
  }
};

template <typename Dtype>
class GaussianFiller : public Filler<Dtype> {
 public:
  using Filler<Dtype>::Filler;
  void Fill(Blob<Dtype>* blob, Rng& rng) override {
    Dtype* data = blob->mutable_cpu_data();
    const int count = blob->count();
    DOPPIO_ENSURE(this->param_.std() > 0) << "gaussian filler: std must be positive";
    rng_gaussian<Dtype>(count, this->param_.mean(), this->param_.std(), rng, data);
    const int sparse = this->param_.sparse();
    if (sparse < 0) return;
    // Each output unit keeps on average `sparse` non-zero inputs, as in Caffe.
    DOPPIO_ENSURE(blob->num_axes() >= 1) << "sparse gaussian filler needs at least one axis";
    const int num_outputs = blob->shape(0);
    const Dtype non_zero_probability = Dtype(sparse) / Dtype(num_outputs);
    DOPPIO_ENSURE(non_zero_probability <= 1)
        << "gaussian filler: sparse " << sparse << " exceeds the " << num_outputs << " outputs";
    std::vector<unsigned int> mask(count);
    rng_bernoulli<Dtype>(count, non_zero_probability, rng, mask.data());
    for (int i = 0; i < count; ++i) data[i] *= mask[i];
  }
};

template <typename Dtype>
class PositiveUnitballFiller : public Filler<Dtype> {
 public:
  using Filler<Dtype>::Filler;
  void Fill(Blob<Dtype>* blob, Rng& rng) override {
    Dtype* data = blob->mutable_cpu_data();
    rng_uniform<Dtype>(blob->count(), 0, 1, rng, data);
    const int num = blob->num_axes() > 0 ? blob->shape(0) : 1;
    const int dim = num > 0 ? blob->count() / num : 0;
    for (int i = 0; i < num; ++i) {
      Dtype sum = 0;
      for (int j = 0; j < dim; ++j) sum += data[i * dim + j];
      for (int j = 0; j < dim; ++j) data[i * dim + j] /= sum;
    }
  }
};

// Glorot & Bengio: uniform in [-sqrt(3/n), sqrt(3/n)], n by variance_norm.
template <typename Dtype>
class XavierFiller : public Filler<Dtype> {
 public:
  using Filler<Dtype>::Filler;
  void Fill(Blob<Dtype>* blob, Rng& rng) override {
    const Dtype n = VarianceScale(this->param_, *blob);
    const Dtype scale = std::sqrt(Dtype(3) / n);
    rng_uniform<Dtype>(blob->count(), -scale, scale, rng, blob->mutable_cpu_data());
  }
};

// He et al.: gaussian with std sqrt(2/n), n by variance_norm.
template <typename Dtype>
class MsraFiller : public Filler<Dtype> {
 public:
  using Filler<Dtype>::Filler;
  void Fill(Blob<Dtype>* blob, Rng& rng) override {
    const Dtype n = VarianceScale(this->param_, *blob);
    const Dtype std = std::sqrt(Dtype(2) / n);
    rng_gaussian<Dtype>(blob->count(), 0, std, rng, blob->mutable_cpu_data());
  }
};

// Bilinear up-sampling kernels for Deconvolution: needs a 4-d blob with square kernels.
template <typename Dtype>
class BilinearFiller : public Filler<Dtype> {
 public:
  using Filler<Dtype>::Filler;
  void Fill(Blob<Dtype>* blob, Rng&) override {
    DOPPIO_ENSURE(blob->num_axes() == 4)
        << "bilinear filler needs a 4-d blob, got shape " << blob->shape_string();
    DOPPIO_ENSURE(blob->width() == blob->height())
        << "bilinear filler needs square kernels, got shape " << blob->shape_string();
    Dtype* data = blob->mutable_cpu_data();
    const int k = blob->width();
    const Dtype f = std::ceil(k / Dtype(2));
    const Dtype c = (k - 1) / (Dtype(2) * f);
    for (int i = 0; i < blob->count(); ++i) {
      const Dtype x = i % k;
      const Dtype y = (i / k) % k;
      data[i] = (1 - std::fabs(x / f - c)) * (1 - std::fabs(y / f - c));
    }
  }
};

}  // namespace

template <typename Dtype>
std::unique_ptr<Filler<Dtype>> GetFiller(const FillerParameter& param) {
  const std::string& type = param.type();
  if (type == "constant") return std::make_unique<ConstantFiller<Dtype>>(param);
  if (type == "uniform") return std::make_unique<UniformFiller<Dtype>>(param);
  if (type == "gaussian") return std::make_unique<GaussianFiller<Dtype>>(param);
  if (type == "positive_unitball") return std::make_unique<PositiveUnitballFiller<Dtype>>(param);
  if (type == "xavier") return std::make_unique<XavierFiller<Dtype>>(param);
  if (type == "msra") return std::make_unique<MsraFiller<Dtype>>(param);
  if (type == "bilinear") return std::make_unique<BilinearFiller<Dtype>>(param);
  DOPPIO_FAIL() << "unknown filler type '" << type
                << "' (known: constant, uniform, gaussian, positive_unitball, xavier, msra, "
                   "bilinear)";
}

template std::unique_ptr<Filler<float>> GetFiller<float>(const FillerParameter&);
template std::unique_ptr<Filler<double>> GetFiller<double>(const FillerParameter&);

}  // namespace doppio
