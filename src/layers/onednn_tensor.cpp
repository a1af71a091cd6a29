#include "doppio/layers/onednn_tensor.hpp"

#ifdef DOPPIO_WITH_ONEDNN

#include <glog/logging.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "doppio/util/error.hpp"
#include "doppio/util/thread_pool.hpp"

namespace doppio {

namespace {
std::atomic<bool> keep_blocked_layouts{true};

// The scratch a conversion to Caffe's layout reorders into on this thread, grown to the
// largest blob converted and kept.
void* ConversionScratch(std::size_t bytes) {
  struct Block {
    std::unique_ptr<void, decltype(&std::free)> data{nullptr, &std::free};
    std::size_t bytes = 0;
  };
  thread_local Block block;
  if (bytes > block.bytes || !block.data) {
    block.data.reset();
    block.bytes = 0;
    const std::size_t rounded = OnednnAligned(bytes == 0 ? 1 : bytes);
    block.data.reset(std::aligned_alloc(64, rounded));
    DOPPIO_ENSURE(block.data != nullptr)
        << "cannot allocate " << bytes << " bytes of host scratch to reorder a blob to NCHW";
    block.bytes = rounded;
  }
  return block.data.get();
}
}  // namespace

void SetOnednnKeepsBlockedLayouts(bool keep) { keep_blocked_layouts = keep; }
bool OnednnKeepsBlockedLayouts() { return keep_blocked_layouts; }

OnednnLayout::OnednnLayout(const dnnl::engine& engine, const dnnl::memory::desc& desc)
    : engine_(engine), desc_(desc), plain_(OnednnPlainDesc(desc.dims())) {
  to_plain_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine_, desc_, engine_, plain_));
  copy_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine_, plain_, engine_, plain_));
}

void OnednnLayout::ToCanonical(void* bytes, std::size_t size) const {
  CHECK_LE(desc_.get_size(), size);
  UseOnednnThreads();
  OnednnCall("a blob in a oneDNN layout", "reorder to Caffe's layout", [&] {
    dnnl::stream stream(engine_);
    dnnl::memory held(desc_, engine_, bytes);
    dnnl::memory plain(plain_, engine_, ConversionScratch(plain_.get_size()));
    dnnl::memory canonical(plain_, engine_, bytes);
    to_plain_.execute(stream, held, plain);
    copy_.execute(stream, plain, canonical);
    stream.wait();
  });
}

const OnednnLayout* OnednnLayoutOf(const SyncedMemory& memory) {
  return dynamic_cast<const OnednnLayout*>(memory.cpu_layout().get());
}

dnnl::memory::desc OnednnArrivingDesc(const SyncedMemory& memory, const dnnl::memory::dims& dims,
                                      dnnl::memory::data_type type) {
  const OnednnLayout* held = OnednnLayoutOf(memory);
  if (held != nullptr && held->desc().dims() == dims && held->desc().data_type() == type) {
    return held->desc();
  }
  return OnednnPlainDesc(dims, type);
}

dnnl::memory::desc OnednnElementwiseDesc(const SyncedMemory& memory, int count,
                                         dnnl::memory::data_type type) {
  const OnednnLayout* held = OnednnLayoutOf(memory);
  if (held != nullptr && held->desc().data_type() == type &&
      held->desc().get_size() == dnnl::memory::data_type_size(type) * count) {
    return held->desc();
  }
  return OnednnPlainDesc({count}, type);
}

void OnednnTensor::Init(const dnnl::engine& engine, const dnnl::memory::desc& user,
                        const dnnl::memory::desc& primitive) {
  user_ = dnnl::memory(user, engine, DNNL_MEMORY_NONE);
  reordered_ = user != primitive;
  in_place_.reset();
  publish_ = false;
  if (reordered_) {
    primitive_ = dnnl::memory(primitive, engine, DNNL_MEMORY_NONE);
    to_primitive_ = dnnl::reorder(user_, primitive_);
    to_user_ = dnnl::reorder(primitive_, user_);
    if (primitive.get_size() <= user.get_size()) {
      in_place_ = std::make_shared<OnednnLayout>(engine, primitive);
    }
  } else {
    primitive_ = user_;
  }
}

void OnednnTensor::Place(void* at) {
  if (!reordered_) return;
  primitive_.set_data_handle(at);
  placed_ = OnednnWorkspacePlacements();
  kept_ = false;
}

void OnednnTensor::Keep(void* at) {
  if (!reordered_) return;
  primitive_.set_data_handle(at);
  kept_ = true;
}

bool OnednnTensor::ReadsInPlace(const SyncedMemory& blob) const {
  const OnednnLayout* held = OnednnLayoutOf(blob);
  return held != nullptr && (held == in_place_.get() || held->desc() == primitive_.get_desc());
}

bool OnednnTensor::WritesInPlace(const SyncedMemory& blob) const {
  // A view (a TEST net's activations sharing one buffer, the parameter arena) stays in
  // Caffe's layout: its buffer is another blob's too.
  return in_place_ && !blob.is_view() && OnednnKeepsBlockedLayouts();
}

OnednnTensor* OnednnTensor::ForRead(const SyncedMemory& blob) {
  return reordered_ && !ReadsInPlace(blob) ? this : nullptr;
}

OnednnTensor* OnednnTensor::ForWrite(const SyncedMemory& blob) {
  return reordered_ && !WritesInPlace(blob) ? this : nullptr;
}

dnnl::memory& OnednnTensor::Copy() {
  DOPPIO_ENSURE(kept_ || placed_ == OnednnWorkspacePlacements())
      << "internal error: a oneDNN layer used a tensor copy it did not place in the workspace "
         "for this call (OnednnPlaceInWorkspace)";
  return primitive_;
}

const dnnl::memory& OnednnTensor::Read(dnnl::stream& stream, const void* user) {
  user_.set_data_handle(const_cast<void*>(user));
  if (!reordered_) return primitive_;
  to_primitive_.execute(stream, user_, Copy());
  return primitive_;
}

const dnnl::memory& OnednnTensor::Read(dnnl::stream& stream, SyncedMemory& blob) {
  if (reordered_ && ReadsInPlace(blob)) {
    primitive_.set_data_handle(const_cast<void*>(blob.raw_cpu_data()));
    return primitive_;
  }
  return Read(stream, blob.cpu_data());
}

const dnnl::memory& OnednnTensor::Write(void* user) {
  user_.set_data_handle(user);
  publish_ = reordered_;
  return reordered_ ? Copy() : primitive_;
}

const dnnl::memory& OnednnTensor::Write(SyncedMemory& blob) {
  if (reordered_ && WritesInPlace(blob)) {
    primitive_.set_data_handle(blob.mutable_raw_cpu_data(in_place_));
    publish_ = false;
    return primitive_;
  }
  // Not converted first: the primitive overwrites the bytes, and may be reading them as they
  // are (in place).
  return Write(blob.mutable_raw_cpu_data(nullptr));
}

void OnednnTensor::Publish(dnnl::stream& stream) {
  if (publish_) to_user_.execute(stream, primitive_, user_);
  publish_ = false;
}

void OnednnPlaceAllInWorkspace(const std::vector<OnednnTensor*>& tensors) {
  std::size_t total = 0;
  for (const OnednnTensor* tensor : tensors) {
    if (tensor) total += OnednnAligned(tensor->transient_bytes());
  }
  char* at = static_cast<char*>(OnednnWorkspace(total));
  for (OnednnTensor* tensor : tensors) {
    if (!tensor) continue;
    tensor->Place(at);
    at += OnednnAligned(tensor->transient_bytes());
  }
}

// On the pool's threads, vectorized: serial and scalar, a NaN scan took half of pool1's
// forward (AlexNet batch 8, 2 threads: 0.8 of 1.6 ms).
float OnednnMaxMagnitude(const float* data, int count) {
  constexpr int kGrain = 1 << 16;
  std::vector<std::uint32_t> most(ParallelPartsFor(count, kGrain), 0);
  ParallelFor(count, kGrain, [&](int begin, int end, int part) {
    // A float's bits without the sign order as its magnitude does, infinity's above every
    // finite one's and a NaN's above infinity's: an integer maximum, which the compiler
    // vectorizes (a float comparison chain it does not).
    std::uint32_t part_most = 0;
    for (int i = begin; i < end; ++i) {
      std::uint32_t bits;
      std::memcpy(&bits, data + i, sizeof bits);
      part_most = std::max(part_most, bits & 0x7fffffffu);
    }
    most[part] = part_most;
  });
  const std::uint32_t bits = most.empty() ? 0 : *std::max_element(most.begin(), most.end());
  float magnitude;
  std::memcpy(&magnitude, &bits, sizeof magnitude);
  return magnitude;
}

bool OnednnHasNaN(const float* data, int count) {
  return std::isnan(OnednnMaxMagnitude(data, count));
}

float OnednnHeldMaxMagnitude(SyncedMemory& memory, int count) {
  const OnednnLayout* held = OnednnLayoutOf(memory);
  if (held == nullptr || held->desc().data_type() != dnnl::memory::data_type::bf16) {
    return OnednnMaxMagnitude(static_cast<const float*>(memory.raw_cpu_data()), count);
  }
  // A bf16 is a float's upper half: its magnitude bits order as the float's do.
  const auto* data = static_cast<const std::uint16_t*>(memory.raw_cpu_data());
  constexpr int kGrain = 1 << 16;
  std::vector<std::uint16_t> most(ParallelPartsFor(count, kGrain), 0);
  ParallelFor(count, kGrain, [&](int begin, int end, int part) {
    std::uint16_t part_most = 0;
    for (int i = begin; i < end; ++i) {
      part_most = std::max<std::uint16_t>(part_most, data[i] & 0x7fffu);
    }
    most[part] = part_most;
  });
  const std::uint32_t bits = most.empty() ? 0 : *std::max_element(most.begin(), most.end());
  float magnitude;
  const std::uint32_t widened = bits << 16;
  std::memcpy(&magnitude, &widened, sizeof magnitude);
  return magnitude;
}

bool OnednnHeldHasNaN(SyncedMemory& memory, int count) {
  return std::isnan(OnednnHeldMaxMagnitude(memory, count));
}

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
