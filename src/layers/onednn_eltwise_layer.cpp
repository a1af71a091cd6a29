#include "doppio/layers/onednn_eltwise_layer.hpp"

#ifdef DOPPIO_WITH_ONEDNN

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "doppio/core/layer_registry.hpp"
#include "doppio/layers/relu_layer.hpp"
#include "doppio/util/half.hpp"
#include "doppio/util/thread_pool.hpp"

namespace doppio {

std::string OnednnEltwiseLayer::Unsupported(const LayerParameter& param) {
  if (param.eltwise_param().operation() != EltwiseParameter::SUM) {
    return "oneDNN's engine here runs operation SUM only (PROD and MAX run on engine CAFFE)";
  }
  return "";
}

void OnednnEltwiseLayer::Reshape(const BlobVec& bottom, const BlobVec& top) {
  EltwiseLayer<float>::Reshape(bottom, top);
  bottom_diffs_.resize(bottom.size(), BottomDiff::kWritten);
  for (std::size_t i = 0; i < bottom.size(); ++i) {
    if (bottom_diffs_[i] == BottomDiff::kShared && bottom[i] != top[0]) {
      bottom[i]->ShareDiff(*top[0]);
    }
  }
  const int count = bottom[0]->count();
  if (count == prepared_count_) return;
  prepared_count_ = count;
  forward_desc_ = dnnl::memory::desc();
  backward_desc_ = dnnl::memory::desc();
}

void OnednnEltwiseLayer::ShareDiffWithTop(int i) {
  DOPPIO_ENSURE(coeffs_[i] == 1.f) << this->Describe() << ": bottom " << i << " has coefficient "
                                   << coeffs_[i] << ", and only a diff of coefficient 1 is shared";
  bottom_diffs_.resize(coeffs_.size(), BottomDiff::kWritten);
  bottom_diffs_[i] = BottomDiff::kShared;
}

void OnednnEltwiseLayer::LeaveDiffToReader(int i) {
  DOPPIO_ENSURE(coeffs_[i] == 1.f) << this->Describe() << ": bottom " << i << " has coefficient "
                                   << coeffs_[i] << ", and only a diff of coefficient 1 is left";
  bottom_diffs_.resize(coeffs_.size(), BottomDiff::kWritten);
  bottom_diffs_[i] = BottomDiff::kLeft;
}

bool OnednnEltwiseLayer::LeftToReader(const Blob<float>& bottom) const {
  const SyncedMemory* diff = bottom.diff().get();
  return std::any_of(left_.begin(), left_.end(), [&](const LeftDiff& left) {
    return left.blob == &bottom && left.diff == diff && left.writes == diff->write_count();
  });
}

namespace {
// Values as floats or bf16 (mixed precision), which are added and rectified in float.
inline float Widen(float value) { return value; }
inline float Widen(std::uint16_t value) { return Bfloat16ToFloat(value); }
template <typename T>
T Narrow(float value) {
  if constexpr (std::is_same_v<T, float>) {
    return value;
  } else {
    return FloatToBfloat16(value);
  }
}

// Caffe's ReLU of a + b over [begin, end); sets *nan where the output holds a NaN. A slope known
// to be 0 is what lets the compiler vectorize ReLUValue (with a slope read at run time the loop
// took 2 to 3 times as long).
template <bool kLeaky, typename T>
void SumReLUPart(const T* a, const T* b, T* y, int begin, int end, float slope, char* nan) {
  int any = 0;
  for (int i = begin; i < end; ++i) {
    const float v = ReLUValue(Widen(a[i]) + Widen(b[i]), kLeaky ? slope : 0.f);
    y[i] = Narrow<T>(v);
    any |= v != v;
  }
  *nan = any != 0;
}

// Caffe's ReLU of a + b over `count` values, all in one layout, in one pass; whether the output
// holds a NaN. On one core it takes what oneDNN's binary add with the ReLU post-op takes (3.6 ms
// for ResNet-50's 8x256x56x56; twice that with a slope above 0), and that post-op makes a NaN 0,
// which a scan of both bottoms beforehand would catch at the cost of a second pass over them.
template <typename T>
bool SumReLU(const T* a, const T* b, T* y, int count, float slope) {
  constexpr int kGrain = 1 << 15;
  std::vector<char> nan(ParallelPartsFor(count, kGrain), 0);
  ParallelFor(count, kGrain, [&](int begin, int end, int part) {
    if (slope == 0) {
      SumReLUPart<false>(a, b, y, begin, end, slope, &nan[part]);
    } else {
      SumReLUPart<true>(a, b, y, begin, end, slope, &nan[part]);
    }
  });
  return std::find(nan.begin(), nan.end(), 1) != nan.end();
}
}  // namespace

void OnednnEltwiseLayer::PrepareForward(const dnnl::memory::desc& desc, std::size_t bottoms) {
  if (!fuses_relu()) {
    const std::vector<dnnl::memory::desc> descs(bottoms, desc);
    forward_ = dnnl::sum(dnnl::sum::primitive_desc(desc, coeffs_, descs, engine()));
  }
  const auto plain = OnednnPlainDesc(desc.dims());
  srcs_.assign(bottoms, OnednnTensor());
  for (auto& src : srcs_) src.Init(engine(), plain, desc);
  dst_.Init(engine(), plain, desc);
  forward_desc_ = desc;
}

void OnednnEltwiseLayer::PrepareBackward(const dnnl::memory::desc& desc) {
  scales_.clear();
  for (const float coeff : coeffs_) {
    scales_.emplace_back(dnnl::eltwise_forward::primitive_desc(
        dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference,
                                    dnnl::algorithm::eltwise_linear, desc, coeff, 0.f),
        engine()));
  }
  const auto plain = OnednnPlainDesc(desc.dims());
  diff_dst_.Init(engine(), plain, desc);
  diff_src_.Init(engine(), plain, desc);
  backward_desc_ = desc;
}

void OnednnEltwiseLayer::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  CountForward();
  if (bottom[0]->count() == 0) return;
  // The layout every bottom arrives in, else Caffe's.
  const dnnl::memory::data_type type = data_type();
  dnnl::memory::desc desc = OnednnElementwiseDesc(*bottom[0]->data(), prepared_count_, type);
  for (const auto* blob : bottom) {
    if (OnednnElementwiseDesc(*blob->data(), prepared_count_, type) != desc)
      desc = OnednnPlainDesc({prepared_count_}, type);
  }
  if (desc != forward_desc_) {
    Build("sum", [&] { PrepareForward(desc, bottom.size()); });
  }
  // A bottom in another type than the sum's (an f32 one in a bf16 sum) is read as a copy.
  std::vector<OnednnTensor*> transient{dst_.ForWrite(*top[0]->data())};
  for (std::size_t i = 0; i < bottom.size(); ++i) {
    const bool repeated = std::count(bottom.begin(), bottom.end(), bottom[i]) > 1;
    transient.push_back(repeated ? &srcs_[i] : srcs_[i].ForRead(*bottom[i]->data()));
  }
  OnednnPlaceAllInWorkspace(transient);
  Run("sum forward", [&] {
    OnednnArgs args;
    for (std::size_t i = 0; i < bottom.size(); ++i) {
      args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i)] =
          srcs_[i].Read(stream(), *bottom[i]->data());
    }
    args[DNNL_ARG_DST] = dst_.Write(*top[0]->data());
    if (fuses_relu()) {
      stream().wait();
      // A NaN out makes the ReLU's Backward Caffe's: oneDNN's takes a NaN for positive.
      const auto sum_relu = [&](auto* type) {
        using T = std::remove_pointer_t<decltype(type)>;
        const auto values = [&](int arg) { return static_cast<T*>(args[arg].get_data_handle()); };
        return SumReLU(values(DNNL_ARG_MULTIPLE_SRC), values(DNNL_ARG_MULTIPLE_SRC + 1),
                       values(DNNL_ARG_DST), prepared_count_, relu_slope());
      };
      SetRanCaffeReLU(type == dnnl::memory::data_type::bf16
                          ? sum_relu(static_cast<std::uint16_t*>(nullptr))
                          : sum_relu(static_cast<float*>(nullptr)));
    } else {
      forward_.execute(stream(), args);
    }
    dst_.Publish(stream());
  });
}

void OnednnEltwiseLayer::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                      const BlobVec& bottom) {
  left_.clear();
  if (bottom[0]->count() == 0) return;
  // The bottoms whose diffs are written: not those that share the top's, not those left.
  std::vector<int> written;
  for (std::size_t i = 0; i < bottom.size(); ++i) {
    if (!propagate_down[i]) continue;
    const SyncedMemory& diff = *bottom[i]->diff();
    if (bottom_diffs_[i] == BottomDiff::kLeft) {
      left_.push_back({bottom[i], &diff, diff.write_count()});
    } else if (bottom_diffs_[i] == BottomDiff::kWritten || &diff != top[0]->diff().get()) {
      written.push_back(static_cast<int>(i));
    }
  }
  if (written.empty()) return;
  // In the layout the top diff arrives in: each bottom diff is a multiple of it.
  const auto desc = OnednnElementwiseDesc(*top[0]->diff(), prepared_count_, data_type());
  if (desc != backward_desc_) {
    Build("sum backward (eltwise linear)", [&] { PrepareBackward(desc); });
  }
  OnednnPlaceInWorkspace(diff_dst_.ForRead(*top[0]->diff()), &diff_src_);
  Run("sum backward (eltwise linear)", [&] {
    const dnnl::memory& diff_dst = diff_dst_.Read(stream(), *top[0]->diff());
    // Last to first: an in-place bottom[0] shares the top diff, which the others read.
    for (auto i = written.rbegin(); i != written.rend(); ++i) {
      scales_[*i].execute(stream(), {{DNNL_ARG_SRC, diff_dst},
                                     {DNNL_ARG_DST, diff_src_.Write(*bottom[*i]->diff())}});
      diff_src_.Publish(stream());
    }
  });
}

DOPPIO_REGISTER_LAYER_ENGINE_FLOAT_IF(Eltwise, ONEDNN, OnednnEltwiseLayer,
                                      OnednnEltwiseLayer::Unsupported);

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
