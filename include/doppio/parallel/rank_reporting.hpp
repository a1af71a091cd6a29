#pragma once

#include <vector>

#include "doppio/core/net.hpp"
#include "doppio/parallel/communicator.hpp"

namespace doppio {

// Where the time of the iterations so far went on this rank (seconds, summed).
struct ParallelTotals {
  int iterations = 0;
  double iteration = 0;  // wall time of whole iterations (from one's start to the next's)
  double compute = 0;    // forward and backward
  double wait = 0;       // blocked on communication (exposed)
  double comm = 0;       // communication in progress
  double hidden = 0;     // communication overlapping backward
  double codec = 0;      // compressing and decompressing gradients
  double bytes = 0;      // sent to the collectives
};

// Collective: turns this rank's means over its `mine` test batches into the means over
// all `total` batches of every rank. A rank with one batch fewer than others then skips
// one in `test_net`'s sharded data layers, so that every rank's data stream is at the same
// place for the next test.
template <typename Dtype>
void ReduceTestScores(Communicator& comm, Net<Dtype>* test_net, int mine, int total,
                      std::vector<double>* means);

// Collective: rank 0 logs the slowest and fastest ranks' compute, their communication
// wait, the part of communication hidden behind backward and the throughput of the
// iterations since `*at_last_display`, which becomes `totals`, with what the gradients are
// sent as (`compression`, a --grad_compression value) and rank 0's bytes per iteration.
void LogRankTimes(Communicator& comm, const ParallelTotals& totals, ParallelTotals* at_last_display,
                  int iter, long long global_batch, const std::string& compression = "none");

}  // namespace doppio
