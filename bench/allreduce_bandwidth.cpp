// The achieved bandwidth of the gradient allreduce alone: MpiCommunicator's in-place float sum,
// as GradientSync issues it, for message sizes from 1 MB up, and one JSON line per size from
// rank 0. The bus bandwidth is bytes x 2(N-1)/N / time, the traffic every rank's link carries
// in each direction under a bandwidth-optimal allreduce, so it compares with the link rate
// whatever the rank count. bench/allreduce_bandwidth.py runs it on the namespace cluster.
//
//   mpiexec -np 2 build/bench/bench_allreduce_bandwidth --sizes_mb=1,16,256
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "doppio/parallel/mpi_communicator.hpp"
#include "doppio/util/error.hpp"

DEFINE_string(sizes_mb, "1,4,16,64,256", "Message sizes in MB (2^20 bytes), comma-separated.");
DEFINE_int32(repeats, 3, "Timed allreduces per size; the fastest and the median are printed.");

namespace doppio {
namespace {

std::vector<double> ParseSizes(const std::string& text) {
  std::vector<double> sizes;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string part = text.substr(start, end - start);
    char* rest = nullptr;
    const double mb = std::strtod(part.c_str(), &rest);
    DOPPIO_ENSURE(!part.empty() && *rest == '\0' && mb > 0 && mb <= 1024)
        << "--sizes_mb: '" << part << "' is not a size in MB between 0 and 1024";
    sizes.push_back(mb);
    start = end + 1;
  }
  DOPPIO_ENSURE(!sizes.empty()) << "--sizes_mb is empty";
  return sizes;
}

int Run() {
  DOPPIO_ENSURE(FLAGS_repeats >= 1) << "--repeats must be positive, not " << FLAGS_repeats;
  const std::vector<double> sizes = ParseSizes(FLAGS_sizes_mb);
  DOPPIO_ENSURE(MpiCommunicator::LaunchedByMpi())
      << "run under an MPI launcher with at least 2 ranks (mpiexec -np 2 ...)";
  MpiCommunicator comm;
  comm.set_timeout(600);
  DOPPIO_ENSURE(comm.size() >= 2) << "an allreduce needs at least 2 ranks, not " << comm.size();
  const double ranks = comm.size();
  const char* algorithm = std::getenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm");

  for (double mb : sizes) {
    const std::size_t count = static_cast<std::size_t>(mb * 1048576 / sizeof(float));
    // Small integers sum exactly in float, so the result can be checked on every rank.
    std::vector<float> buffer(count);
    std::vector<double> times;
    for (int run = -1; run < FLAGS_repeats; ++run) {
      for (std::size_t i = 0; i < count; ++i) buffer[i] = float((i + comm.rank()) % 7);
      comm.Barrier("allreduce_bandwidth: start");
      const double start = CommClockSeconds();
      comm.Allreduce(buffer.data(), count, CommType::kFloat, ReduceOp::kSum, "allreduce_bandwidth");
      double seconds = CommClockSeconds() - start;
      comm.Allreduce(&seconds, 1, CommType::kDouble, ReduceOp::kMax, "allreduce_bandwidth: time");
      // The first one connects the ranks and touches the buffers: untimed.
      if (run >= 0) times.push_back(seconds);
      for (std::size_t i = 0; i < count; i += count / 97 + 1) {
        float expected = 0;
        for (int r = 0; r < comm.size(); ++r) expected += float((i + r) % 7);
        DOPPIO_ENSURE(buffer[i] == expected) << "rank " << comm.rank() << ": element " << i
                                             << " is " << buffer[i] << ", expected " << expected;
      }
    }
    std::sort(times.begin(), times.end());
    const double bytes = count * sizeof(float);
    const double bus_bytes = bytes * 2 * (ranks - 1) / ranks;
    if (comm.rank() == 0) {
      std::printf(
          "{\"ranks\": %d, \"mb\": %g, \"bytes\": %.0f, \"best_s\": %.6f, \"median_s\": %.6f, "
          "\"bus_gbps\": %.4f, \"bus_gbps_median\": %.4f, \"libnbc_iallreduce_algorithm\": "
          "\"%s\"}\n",
          comm.size(), mb, bytes, times.front(), times[times.size() / 2],
          bus_bytes * 8 / times.front() / 1e9, bus_bytes * 8 / times[times.size() / 2] / 1e9,
          algorithm ? algorithm : "");
      std::fflush(stdout);
    }
  }
  comm.Barrier("allreduce_bandwidth: end");
  return 0;
}

}  // namespace
}  // namespace doppio

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = true;
  FLAGS_minloglevel = google::WARNING;
  try {
    return doppio::Run();
  } catch (const doppio::Error& error) {
    LOG(ERROR) << error.what();
    return 1;
  }
}
