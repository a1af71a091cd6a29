#include "doppio/parallel/rank_reporting.hpp"

#include <glog/logging.h>

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "doppio/core/layer_registry.hpp"

namespace doppio {

namespace {

std::string Milliseconds(double seconds) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(seconds < 0.01 ? 2 : 1) << seconds * 1e3 << " ms";
  return text.str();
}

std::string Bytes(double bytes) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(1);
  if (bytes < (1 << 20)) {
    text << bytes / 1024 << " KB";
  } else {
    text << bytes / (1 << 20) << " MB";
  }
  return text.str();
}

}  // namespace

template <typename Dtype>
void ReduceTestScores(Communicator& comm, Net<Dtype>* test_net, int mine, int total,
                      std::vector<double>* means) {
  if (comm.size() == 1 || means->empty()) return;
  std::vector<double> sums(means->size());
  for (std::size_t i = 0; i < sums.size(); ++i) sums[i] = (*means)[i] * mine;
  comm.Allreduce(sums.data(), sums.size(), CommType::kDouble, ReduceOp::kSum, "test scores");
  for (std::size_t i = 0; i < sums.size(); ++i) (*means)[i] = sums[i] / total;
  // Each test then scores `total` consecutive batches (the whole test set once when total
  // x batch is its size).
  const int most = (total + comm.size() - 1) / comm.size();
  if (mine < most) {
    for (std::size_t i = 0; i < test_net->layers().size(); ++i) {
      if (test_net->bottom_vecs()[i].empty() &&
          LayerTypeTraits(test_net->layers()[i]->type()).shard) {
        test_net->ForwardFromTo(static_cast<int>(i), static_cast<int>(i));
      }
    }
  }
  LOG_FIRST_N(INFO, 1) << "Test scores are means over all " << total << " test batches of the "
                       << comm.size() << " ranks";
}

void LogRankTimes(Communicator& comm, const ParallelTotals& totals, ParallelTotals* at_last_display,
                  int iter, long long global_batch, const std::string& compression) {
  if (comm.size() == 1) return;
  const ParallelTotals& last = *at_last_display;
  const int iterations = totals.iterations - last.iterations;
  const double n = std::max(1, iterations);
  constexpr int kFields = 5;
  double mine[kFields] = {(totals.compute - last.compute) / n, (totals.wait - last.wait) / n,
                          (totals.comm - last.comm) / n, (totals.hidden - last.hidden) / n,
                          (totals.iteration - last.iteration) / n};
  const double bytes = (totals.bytes - last.bytes) / n;
  const double codec = (totals.codec - last.codec) / n;
  *at_last_display = totals;
  std::vector<double> all(kFields * comm.size());
  comm.Allgather(mine, all.data(), kFields, CommType::kDouble, "rank times");
  if (comm.rank() != 0) return;
  int slowest = 0, fastest = 0, most_wait = 0, least_wait = 0;
  double communication = 0, hidden = 0, iteration = 0;
  for (int r = 0; r < comm.size(); ++r) {
    const double* times = &all[kFields * r];
    if (times[0] > all[kFields * slowest]) slowest = r;
    if (times[0] < all[kFields * fastest]) fastest = r;
    if (times[1] > all[kFields * most_wait + 1]) most_wait = r;
    if (times[1] < all[kFields * least_wait + 1]) least_wait = r;
    communication += times[2];
    hidden += times[3];
    iteration = std::max(iteration, times[4]);
  }
  std::ostringstream line;
  line << "Iteration " << iter << ", ranks over the last " << iterations << " iteration"
       << (iterations == 1 ? "" : "s") << ": compute per iteration slowest rank " << slowest << " "
       << Milliseconds(all[kFields * slowest]) << ", fastest rank " << fastest << " "
       << Milliseconds(all[kFields * fastest]) << "; communication wait most rank " << most_wait
       << " " << Milliseconds(all[kFields * most_wait + 1]) << ", least rank " << least_wait << " "
       << Milliseconds(all[kFields * least_wait + 1]) << "; communication "
       << Milliseconds(communication / comm.size()) << " per iteration, "
       << static_cast<int>(communication > 0 ? 100.0 * hidden / communication + 0.5 : 0)
       << "% hidden behind backward, " << Bytes(bytes) << " sent per iteration by rank 0 ("
       << (compression == "none"
               ? std::string("uncompressed")
               : "--grad_compression=" + compression + ", " + Milliseconds(codec) + " compressing")
       << "); " << std::fixed << std::setprecision(1)
       << (iteration > 0 ? global_batch / iteration : 0.0) << " images/s over all ranks";
  LOG(INFO) << line.str();
}

template void ReduceTestScores(Communicator&, Net<float>*, int, int, std::vector<double>*);
template void ReduceTestScores(Communicator&, Net<double>*, int, int, std::vector<double>*);

}  // namespace doppio
