#pragma once

#include <optional>
#include <string>
#include <vector>

namespace doppio {

// The snapshot a requeued job resumes from (`doppio train --resume=auto`): among the files
// Solver::Snapshot writes for `snapshot_prefix` (<prefix>_iter_<N>.solverstate, or
// .solverstate.h5), the one of the highest N that is complete: it reads as a solver state of
// iteration N, and the weights it names exist and read. A newer one that is not (a job killed
// while writing, a weights file deleted) is passed over, with the reason appended to
// `passed_over`. No snapshot at all: nullopt.
struct FoundSnapshot {
  std::string state_file;
  int iter = 0;
};
std::optional<FoundSnapshot> NewestCompleteSnapshot(const std::string& snapshot_prefix,
                                                    std::vector<std::string>* passed_over);

}  // namespace doppio
