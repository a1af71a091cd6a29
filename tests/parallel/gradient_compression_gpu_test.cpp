// The GPU twins of the --grad_compression codecs against the host's (CUDA builds; under the
// emulation on the CPU): fp16/bf16 and top-k give the host's sums and residuals bit for bit
// (top-k also with ties, k = 1, k = n, buckets smaller than a block and over two tiles,
// double values at odd byte offsets of the message, and with the momentum correction), PowerSGD and
// its Gram-Schmidt the host's within float rounding. The ranks are simulated: every one sent what
// this process sends (EchoCommunicator), so that the sums run over several ranks.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "doppio/device/gpu_math.hpp"
#include "doppio/parallel/cast_compressor.hpp"
#include "doppio/parallel/powersgd_compressor.hpp"
#include "doppio/parallel/topk_compressor.hpp"
#include "doppio/util/rng.hpp"
#include "gpu_test_util.hpp"

namespace doppio {
namespace {

// `ranks` ranks that all contribute what this one does: an allgather repeats the message,
// an allreduce multiplies by `ranks` (on the GPU for device buffers).
class EchoCommunicator : public SelfCommunicator {
 public:
  EchoCommunicator(int ranks, GpuContext* gpu) : ranks_(ranks), gpu_(gpu) {}
  int size() const override { return ranks_; }
  CommHandle IAllgather(const void* send, void* recv, std::size_t count, CommType type,
                        const std::string& label) override {
    const std::size_t bytes = count * CommTypeSize(type);
    for (int r = 0; r < ranks_; ++r) {
      std::memcpy(static_cast<char*>(recv) + r * bytes, send, bytes);
    }
    return Done(label, bytes * ranks_);
  }
  CommHandle IAllreduce(void* buffer, std::size_t count, CommType type, ReduceOp op,
                        MemoryKind where, const std::string& label) override {
    EXPECT_EQ(type, CommType::kFloat);
    auto* values = static_cast<float*>(buffer);
    if (where == MemoryKind::kDevice) {
      gpu_scal(*gpu_, static_cast<int>(count), static_cast<float>(ranks_), values);
    } else {
      for (std::size_t i = 0; i < count; ++i) values[i] *= ranks_;
    }
    return Done(label, count * sizeof(float));
  }

 private:
  static CommHandle Done(const std::string& label, std::size_t bytes) {
    auto handle = std::make_shared<CommRequest>(label, bytes);
    const double now = CommClockSeconds();
    handle->MarkStarted(now);
    handle->MarkDone(now);
    return handle;
  }
  int ranks_;
  GpuContext* gpu_;
};

template <typename Dtype>
std::vector<Dtype> Gaussian(std::size_t count, std::uint64_t seed, double scale = 1) {
  Rng rng(seed);
  std::vector<Dtype> values(count);
  for (Dtype& value : values) value = static_cast<Dtype>(scale * rng.Gaussian(0, 1));
  return values;
}

// Integers in [-3, 3]: most magnitudes tie, many entries are zero.
template <typename Dtype>
std::vector<Dtype> Ties(std::size_t count, std::uint64_t seed) {
  std::vector<Dtype> values = Gaussian<Dtype>(count, seed, 2);
  for (Dtype& value : values) value = std::max(Dtype(-3), std::min(Dtype(3), std::round(value)));
  return values;
}

// One iteration of `compressor` on `gradient`, in host memory or on the GPU; the sum.
template <typename Dtype>
std::vector<Dtype> Exchange(BucketCompressor<Dtype>* compressor, const std::vector<Dtype>& gradient,
                            Communicator* comm, GpuContext* gpu) {
  Blob<Dtype> bucket({static_cast<int>(gradient.size())});
  std::copy(gradient.begin(), gradient.end(), bucket.mutable_cpu_data());
  Dtype* data = gpu ? bucket.mutable_gpu_data(*gpu) : bucket.mutable_cpu_data();
  compressor->Start(data, comm, "test bucket");
  compressor->Continue();
  compressor->Wait();
  compressor->Decompress(data);
  return std::vector<Dtype>(bucket.cpu_data(), bucket.cpu_data() + bucket.count());
}

template <typename Dtype>
void ExpectNear(const std::vector<Dtype>& host, const std::vector<Dtype>& device,
                const std::string& what) {
  ASSERT_EQ(host.size(), device.size()) << what;
  ExpectClose(host.data(), device.data(), static_cast<int>(host.size()), 1e-4, what);
}

TEST(CastCompressorGpuTest, SumsTheHostsHalvesBitForBit) {
  DOPPIO_REQUIRE_GPU();
  auto gpu = TestGpu();
  for (bool bfloat16 : {false, true}) {
    for (std::size_t count : {1, 255, 1001, 20000}) {
      std::vector<float> gradient = Gaussian<float>(count, count, 1);
      // Beyond binary16's range, subnormal in it, and tiny.
      gradient[0] = 7e4f;
      gradient[count / 2] = 3e-6f;
      gradient[count - 1] = -1e-9f;
      CastCompressor<float> host(count, bfloat16), device(count, bfloat16, gpu.get());
      EchoCommunicator host_comm(3, nullptr), device_comm(3, gpu.get());
      const std::string what = (bfloat16 ? "bf16 " : "fp16 ") + std::to_string(count);
      EXPECT_EQ(Exchange(&device, gradient, &device_comm, gpu.get()),
                Exchange(&host, gradient, &host_comm, nullptr))
          << what;
      EXPECT_EQ(device.bytes_sent(), host.bytes_sent()) << what;
    }
  }
}

// Three iterations (the residual, the velocity and the last step carry over) of top-k on the
// host and on the GPU.
template <typename Dtype>
void ExpectTopKAsTheHost(std::size_t count, double fraction, bool ties, double momentum = 0) {
  auto gpu = TestGpu();
  TopKCompressor<Dtype> host(count, fraction, nullptr, momentum),
      device(count, fraction, gpu.get(), momentum);
  EchoCommunicator host_comm(2, nullptr), device_comm(2, gpu.get());
  const std::string what = std::string(sizeof(Dtype) == 4 ? "float" : "double") + " count " +
                           std::to_string(count) + " k " + std::to_string(host.k()) +
                           (ties ? " with ties" : "") + " momentum " + std::to_string(momentum);
  for (int step = 0; step < 3; ++step) {
    const std::vector<Dtype> gradient =
        ties ? Ties<Dtype>(count, 10 * count + step) : Gaussian<Dtype>(count, count + step);
    ASSERT_EQ(Exchange(&device, gradient, &device_comm, gpu.get()),
              Exchange(&host, gradient, &host_comm, nullptr))
        << what << " step " << step;
    ASSERT_EQ(device.residual(), host.residual()) << what << " step " << step;
    ASSERT_EQ(device.velocity(), host.velocity()) << what << " step " << step;
    ASSERT_EQ(device.shared_state(), host.shared_state()) << what << " step " << step;
  }
}

TEST(TopKCompressorGpuTest, SendsAndSumsWhatTheHostDoes) {
  DOPPIO_REQUIRE_GPU();
  // k = 1, k = n and between; a bucket of one element, smaller than a block, just over one.
  for (std::size_t count : {1, 7, 257}) {
    for (double fraction : {1e-9, 0.3, 1.0}) {
      for (bool ties : {false, true}) {
        ExpectTopKAsTheHost<float>(count, fraction, ties);
        if (HasFatalFailure()) return;
      }
    }
  }
  // Over two tiles of the compaction (4096 entries each): the second places its entries
  // after the first's, above and equal to the k-th magnitude.
  ExpectTopKAsTheHost<float>(4100, 0.3, true);
  // Doubles: the values of an odd k lie at 4 bytes past an 8-byte boundary.
  ExpectTopKAsTheHost<double>(333, 0.01, true);
  // The momentum correction: the velocity and the step less the momentum's share, rounded as
  // the host rounds them.
  ExpectTopKAsTheHost<float>(4100, 0.01, false, 0.9);
  ExpectTopKAsTheHost<double>(333, 0.3, false, 0.9);
}

TEST(PowerSgdCompressorGpuTest, OrthogonalisesAsTheHostDoes) {
  DOPPIO_REQUIRE_GPU();
  auto gpu = TestGpu();
  // More rows than a block has threads; the third column of `dependent` is in the span of
  // the first two and becomes zero on both.
  std::vector<float> tall = Gaussian<float>(600 * 3, 5);
  std::vector<float> dependent = Gaussian<float>(40 * 3, 6);
  for (int r = 0; r < 40; ++r) {
    dependent[r * 3 + 2] = 2 * dependent[r * 3] - dependent[r * 3 + 1];
  }
  for (auto [matrix, rows] : {std::make_pair(tall, 600), std::make_pair(dependent, 40)}) {
    Blob<float> device({rows * 3});
    std::copy(matrix.begin(), matrix.end(), device.mutable_cpu_data());
    PowerSgdCompressor<float>::Orthogonalise_gpu(*gpu, device.mutable_gpu_data(*gpu), rows, 3);
    PowerSgdCompressor<float>::Orthogonalise(matrix.data(), rows, 3);
    ExpectClose(matrix.data(), device.cpu_data(), rows * 3, 1e-5, "rows " + std::to_string(rows));
  }
}

TEST(PowerSgdCompressorGpuTest, CompressesAsTheHostDoesWithinFloatRounding) {
  DOPPIO_REQUIRE_GPU();
  auto gpu = TestGpu();
  // A 12 x 30 matrix, a vector, an 8 x 2 x 3 tensor.
  const std::vector<BucketParam> params = {{0, 360, 12}, {360, 7, 0}, {367, 48, 8}};
  for (int rank : {1, 3}) {
    PowerSgdCompressor<float> host(415, params, rank, 3), device(415, params, rank, 3, gpu.get());
    EchoCommunicator host_comm(2, nullptr), device_comm(2, gpu.get());
    EXPECT_EQ(device.shared_state(), host.shared_state()) << "the same random Q to start from";
    for (int step = 0; step < 2; ++step) {
      const std::string what = "rank " + std::to_string(rank) + " step " + std::to_string(step);
      const std::vector<float> gradient = Gaussian<float>(415, 20 + step);
      ExpectNear(Exchange(&host, gradient, &host_comm, nullptr),
                 Exchange(&device, gradient, &device_comm, gpu.get()), what + " sum");
      ExpectNear(host.residual(), device.residual(), what + " residual");
      ExpectNear(host.shared_state(), device.shared_state(), what + " Q");
      EXPECT_EQ(device.bytes_sent(), host.bytes_sent()) << what;
    }
  }
}

TEST(GradCompressionGpuTest, TheStateMovesBetweenHostAndDevice) {
  DOPPIO_REQUIRE_GPU();
  auto gpu = TestGpu();
  PowerSgdCompressor<float> device(415, {{0, 360, 12}, {360, 55, 0}}, 2, 3, gpu.get());
  EchoCommunicator comm(2, gpu.get());
  Exchange(&device, Gaussian<float>(415, 1), &comm, gpu.get());
  // What a snapshot saves and a resumed run installs: the next iteration is the same.
  const std::vector<float> residual = device.residual(), q = device.shared_state();
  const std::vector<float> next = Gaussian<float>(415, 2);
  const std::vector<float> continued = Exchange(&device, next, &comm, gpu.get());
  PowerSgdCompressor<float> resumed(415, {{0, 360, 12}, {360, 55, 0}}, 2, 99, gpu.get());
  resumed.set_residual(residual);
  resumed.set_shared_state(q);
  EXPECT_EQ(Exchange(&resumed, next, &comm, gpu.get()), continued);
  EXPECT_EQ(resumed.residual(), device.residual());
}

}  // namespace
}  // namespace doppio
