#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "doppio/parallel/communicator.hpp"

namespace doppio {

class MpiEngine;

// Reduce and broadcast go to MPI as pieces of at most this many bytes, all issued at once
// (src/parallel/mpi_ops.cpp says why); the pieces then travel pipelined.
constexpr std::size_t kMpiRootedPieceBytes = std::size_t(4) << 20;
// An allreduce longer than this goes to MPI as pieces of this many bytes, all issued at once:
// on the namespace cluster at 1 Gbit/s one message of 32 MB or more per ring round moved at
// half the link rate, several 4 MB pieces in flight at 85-95% (bench/README.md,
// allreduce_bandwidth.py).
constexpr std::size_t kMpiAllreducePieceBytes = std::size_t(4) << 20;

// The communicator over MPI_COMM_WORLD, on host buffers. Its engine (src/parallel/mpi_engine.hpp)
// is one communication thread that owns MPI: it initialises it, starts every operation
// (non-blocking MPI collectives, in the order they were issued), drives their progress while
// the caller computes, and finalises MPI when the communicator is destroyed. So MPI is only
// ever entered from one thread (plus MPI_Abort).
//
// The same thread is the watchdog (src/parallel/mpi_watchdog.hpp): an operation that has not
// completed `timeout` seconds after it started makes this rank ask every other rank (on a
// separate communicator) which collective it has reached; the ranks that have not issued
// the stalled one are named in the error, and the job is aborted.
//
// Device buffers (MemoryKind::kDevice) are an Error: a StagingCommunicator over this one
// stages them through pinned host memory (Debian's Open MPI is not CUDA-aware).
//
// MPI can be initialised once per process, so there is at most one MpiCommunicator.
class MpiCommunicator : public Communicator {
 public:
  MpiCommunicator();
  // Waits for the operations in flight, then finalises MPI.
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  // Whether this process was started by an MPI launcher (mpirun, mpiexec, srun with PMI).
  static bool LaunchedByMpi();

  int rank() const override;
  int size() const override;
  int local_rank() const override;
  int local_size() const override;
  std::string description() const override;
  bool accepts_device_buffers() const override;

  CommHandle IAllreduce(void* buffer, std::size_t count, CommType type, ReduceOp op,
                        MemoryKind where, const std::string& label) override;
  CommHandle IReduce(void* buffer, std::size_t count, CommType type, ReduceOp op, int root,
                     MemoryKind where, const std::string& label) override;
  CommHandle IBroadcast(void* buffer, std::size_t count, CommType type, int root, MemoryKind where,
                        const std::string& label) override;
  CommHandle IAllgather(const void* send, void* recv, std::size_t count, CommType type,
                        const std::string& label) override;
  CommHandle IBarrier(const std::string& label) override;
  CommHandle IGatherv(const void* send, std::size_t bytes, void* recv,
                      const std::vector<std::size_t>& recv_bytes, int root,
                      const std::string& label) override;
  void Poke() override;
  void set_timeout(double seconds) override;
  double timeout() const override;
  [[noreturn]] void Abort(int exit_code) override;

  // Operations issued so far (the sequence number the watchdog reports).
  std::uint64_t issued() const;

 private:
  std::unique_ptr<MpiEngine> engine_;
};

// The communicator of this process's job: MPI's under a launcher (or with DOPPIO_MPI=1, MPI's
// singleton start; DOPPIO_MPI=0 never uses MPI), else the one-rank communicator, which needs
// no MPI at all. For `doppio train` and the Python package alike.
std::shared_ptr<Communicator> MakeJobCommunicator();

}  // namespace doppio
