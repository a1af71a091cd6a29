#pragma once

namespace doppio {

// Sets up the log of one rank of a parallel job. Rank 0 logs as a single process does. The
// other ranks log warnings and errors only, each line's prefix naming the rank
// ("W20250102 10:11:12.345678 rank 3 solver.cpp:120] ...", glog's form with the rank
// in place of the thread id), and glog's crash reports carry the
// rank too. Call once, after google::InitGoogleLogging; a no-op for a job of one rank.
void SetUpRankLogging(int rank, int size);

}  // namespace doppio
