#include "doppio/parallel/gradient_compression.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <sstream>

#include "doppio/core/common.hpp"
#include "doppio/parallel/cast_compressor.hpp"
#include "doppio/parallel/powersgd_compressor.hpp"
#include "doppio/parallel/topk_compressor.hpp"

namespace doppio {

namespace {

const char kUsage[] = "none, fp16, bf16, topk:FRACTION (0 < FRACTION <= 1) or powersgd:RANK (>= 1)";

// The shortest decimal text that reads back as `value`.
std::string ShortestText(double value) {
  for (int digits = 1;; ++digits) {
    std::ostringstream text;
    text << std::setprecision(digits) << value;
    if (digits >= 17 || std::strtod(text.str().c_str(), nullptr) == value) return text.str();
  }
}

}  // namespace

GradCompression ParseGradCompression(const std::string& value) {
  GradCompression spec;
  const std::size_t colon = value.find(':');
  const std::string method = value.substr(0, colon);
  const std::string argument = colon == std::string::npos ? "" : value.substr(colon + 1);
  const bool takes_argument = method == "topk" || method == "powersgd";
  const bool plain = method == "none" || method == "fp16" || method == "bf16";
  DOPPIO_ENSURE(takes_argument || plain)
      << "--grad_compression must be " << kUsage << ", not '" << value << "'";
  DOPPIO_ENSURE(takes_argument || colon == std::string::npos)
      << "--grad_compression=" << value << ": " << method << " takes no argument";
  if (method == "none") return spec;
  if (plain) {
    spec.method =
        method == "fp16" ? GradCompression::Method::kFp16 : GradCompression::Method::kBf16;
    spec.text = method;
    return spec;
  }
  DOPPIO_ENSURE(!argument.empty())
      << "--grad_compression=" << value << ": " << method << " needs "
      << (method == "topk" ? "a FRACTION (topk:0.01)" : "a RANK (powersgd:4)");
  char* end = nullptr;
  errno = 0;
  if (method == "topk") {
    const double fraction = std::strtod(argument.c_str(), &end);
    DOPPIO_ENSURE(errno == 0 && *end == '\0' && std::isfinite(fraction) && fraction > 0 &&
                  fraction <= 1)
        << "--grad_compression=" << value
        << ": the FRACTION of each bucket sent must be a number in (0, 1], not '" << argument
        << "'";
    spec.method = GradCompression::Method::kTopK;
    spec.fraction = fraction;
    spec.text = "topk:" + ShortestText(fraction);
    return spec;
  }
  const long rank = std::strtol(argument.c_str(), &end, 10);
  DOPPIO_ENSURE(errno == 0 && *end == '\0' && rank >= 1 && rank <= 1 << 20)
      << "--grad_compression=" << value << ": the RANK of PowerSGD must be an integer >= 1, not '"
      << argument << "'";
  spec.method = GradCompression::Method::kPowerSgd;
  spec.rank = static_cast<int>(rank);
  spec.text = "powersgd:" + std::to_string(spec.rank);
  return spec;
}

template <typename Dtype>
void BucketCompressor<Dtype>::Wait() {
  for (const CommHandle& handle : handles_) handle->Wait();
}

template <typename Dtype>
void BucketCompressor<Dtype>::Begin(Communicator* comm) {
  handles_.clear();
  bytes_sent_ = 0;
  comm_ = comm;
}

template <typename Dtype>
std::vector<Dtype> BucketCompressor<Dtype>::residual() {
  return BlobValues(&residual_);
}

template <typename Dtype>
void BucketCompressor<Dtype>::set_residual(const std::vector<Dtype>& values) {
  SetBlobValues(values, &residual_);
}

template <typename Dtype>
Dtype* BucketCompressor<Dtype>::mutable_residual() {
#ifdef DOPPIO_WITH_CUDA
  if (gpu_) return residual_.mutable_gpu_data(*gpu_);
#endif
  return residual_.mutable_cpu_data();
}

template <typename Dtype>
std::vector<Dtype> BlobValues(Blob<Dtype>* blob) {
  if (blob->count() == 0) return {};
  const Dtype* values = blob->cpu_data();
  return std::vector<Dtype>(values, values + blob->count());
}

template <typename Dtype>
void SetBlobValues(const std::vector<Dtype>& values, Blob<Dtype>* blob) {
  DOPPIO_ENSURE(values.size() == static_cast<std::size_t>(blob->count()))
      << values.size() << " values for a buffer of " << blob->count();
  if (values.empty()) return;
  std::copy(values.begin(), values.end(), blob->mutable_cpu_data());
}

template <typename Dtype>
void BucketCompressor<Dtype>::Issued(CommHandle handle, std::size_t bytes) {
  handles_.push_back(std::move(handle));
  bytes_sent_ += bytes;
}

template <typename Dtype>
std::unique_ptr<BucketCompressor<Dtype>> MakeBucketCompressor(
    const GradCompression& spec, std::size_t count, const std::vector<BucketParam>& params,
    std::uint64_t seed, double topk_momentum, GpuContext* gpu) {
  switch (spec.method) {
    case GradCompression::Method::kFp16:
    case GradCompression::Method::kBf16:
      return std::make_unique<CastCompressor<Dtype>>(
          count, spec.method == GradCompression::Method::kBf16, gpu);
    case GradCompression::Method::kTopK:
      return std::make_unique<TopKCompressor<Dtype>>(count, spec.fraction, gpu, topk_momentum);
    case GradCompression::Method::kPowerSgd:
      return std::make_unique<PowerSgdCompressor<Dtype>>(count, params, spec.rank, seed, gpu);
    case GradCompression::Method::kNone:
      break;
  }
  return nullptr;
}

DOPPIO_INSTANTIATE_CLASS(BucketCompressor);
template std::vector<float> BlobValues(Blob<float>*);
template std::vector<double> BlobValues(Blob<double>*);
template void SetBlobValues(const std::vector<float>&, Blob<float>*);
template void SetBlobValues(const std::vector<double>&, Blob<double>*);
template std::unique_ptr<BucketCompressor<float>> MakeBucketCompressor(
    const GradCompression&, std::size_t, const std::vector<BucketParam>&, std::uint64_t, double,
    GpuContext*);
template std::unique_ptr<BucketCompressor<double>> MakeBucketCompressor(
    const GradCompression&, std::size_t, const std::vector<BucketParam>&, std::uint64_t, double,
    GpuContext*);

}  // namespace doppio
