#pragma once

#include <string>

namespace doppio {

// A deliberate failure for testing the job's failure handling: rank `rank` fails at the
// start of iteration `iter`: throws an Error ("error"), dies of SIGSEGV ("crash"), exits
// with code 3 without finalising MPI ("exit") or hangs forever ("hang", for
// --comm_timeout); or, without failing itself, puts a NaN in its first layer's output at
// that iteration ("nan", applied by DistributedSolver: a divergence that only that rank's
// forward pass shows). The library never arms one by itself: tests pass one to
// DistributedSolver, and the test build of the doppio tool (doppio_faults) reads one from
// DOPPIO_FAIL_RANK, DOPPIO_FAIL_ITER and DOPPIO_FAIL_MODE (tools/faults/).
struct FaultInjection {
  int rank = -1;
  int iter = -1;
  std::string mode = "error";
  bool active() const { return rank >= 0; }
  // Fails as described when this is rank `rank` at iteration `iter`; else returns.
  void MaybeFail(int rank_here, int iter_here) const;
};

}  // namespace doppio
