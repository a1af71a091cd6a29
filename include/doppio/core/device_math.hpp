#pragma once

#include "doppio/core/blob.hpp"
#include "doppio/device/gpu_context.hpp"

namespace doppio {

// Element-wise math and blob access on one side: the GPU of a context when one is given,
// else the host. Code that must run wherever its net runs (the solvers' updates) takes its
// pointers and its arithmetic from the same DeviceMath, so one text serves both sides.
template <typename Dtype>
class DeviceMath {
 public:
  // gpu null: the host.
  explicit DeviceMath(GpuContext* gpu) : gpu_(gpu) {}
  bool on_gpu() const { return gpu_ != nullptr; }

  const Dtype* data(const Blob<Dtype>& blob) const;
  const Dtype* diff(const Blob<Dtype>& blob) const;
  Dtype* mutable_data(Blob<Dtype>* blob) const;
  Dtype* mutable_diff(Blob<Dtype>* blob) const;

  // The same meanings as the cpu_ / gpu_ functions of math_functions.hpp.
  void axpy(int n, Dtype alpha, const Dtype* x, Dtype* y) const;
  void axpby(int n, Dtype alpha, const Dtype* x, Dtype beta, Dtype* y) const;
  void scal(int n, Dtype alpha, Dtype* x) const;
  void scale(int n, Dtype alpha, const Dtype* x, Dtype* y) const;
  void copy(int n, const Dtype* x, Dtype* y) const;
  void set(int n, Dtype value, Dtype* y) const;
  void add(int n, const Dtype* a, const Dtype* b, Dtype* y) const;
  void mul(int n, const Dtype* a, const Dtype* b, Dtype* y) const;
  void div(int n, const Dtype* a, const Dtype* b, Dtype* y) const;
  void add_scalar(int n, Dtype alpha, Dtype* y) const;
  void sqr(int n, const Dtype* a, Dtype* y) const;
  void sqrt(int n, const Dtype* a, Dtype* y) const;
  void sign(int n, const Dtype* a, Dtype* y) const;

 private:
  GpuContext* gpu_;
};

}  // namespace doppio
