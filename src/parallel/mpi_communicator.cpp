#include "doppio/parallel/mpi_communicator.hpp"

#include <climits>
#include <cstdlib>
#include <sstream>

#include "doppio/core/common.hpp"
#include "mpi_engine.hpp"
#include "mpi_ops.hpp"

namespace doppio {

namespace {

CommHandle SubmitInPlace(MpiEngine& engine, InPlaceKind kind, void* buffer, std::size_t count,
                         CommType type, ReduceOp op, int root, MemoryKind where,
                         const std::string& label) {
  DOPPIO_ENSURE(where == MemoryKind::kHost || engine.cuda_aware())
      << label << ": a device buffer, but this MPI is not CUDA-aware (stage it through host "
      << "memory: StagingCommunicator)";
  return engine.Submit(MakeInPlaceOp(kind, buffer, count, type, op, root), label,
                       count * CommTypeSize(type));
}

}  // namespace

MpiCommunicator::MpiCommunicator() : engine_(std::make_unique<MpiEngine>()) {}

MpiCommunicator::~MpiCommunicator() {
  // A barrier under the watchdog first: MPI_Finalize would wait forever for a rank that is
  // still training.
  IBarrier("shutdown")->Wait();
}

bool MpiCommunicator::LaunchedByMpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK", "PMIX_RANK",
                           "MPI_LOCALNRANKS", "MV2_COMM_WORLD_SIZE"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

int MpiCommunicator::rank() const { return engine_->rank(); }
int MpiCommunicator::size() const { return engine_->size(); }
int MpiCommunicator::local_rank() const { return engine_->local_rank(); }
int MpiCommunicator::local_size() const { return engine_->local_size(); }
bool MpiCommunicator::accepts_device_buffers() const { return engine_->cuda_aware(); }
std::uint64_t MpiCommunicator::issued() const { return engine_->progress().issued(); }

std::string MpiCommunicator::description() const {
  const int level = engine_->thread_level();
  std::ostringstream text;
  text << "MPI (" << engine_->library() << ", thread level "
       << (level == MPI_THREAD_MULTIPLE     ? "multiple"
           : level == MPI_THREAD_SERIALIZED ? "serialized"
                                            : "funneled")
       << (engine_->cuda_aware() ? ", CUDA-aware" : "") << ", allreduce "
       << engine_->allreduce_algorithm() << "), " << size() << " rank" << (size() == 1 ? "" : "s")
       << ", " << local_size() << " on this node";
  return text.str();
}

CommHandle MpiCommunicator::IAllreduce(void* buffer, std::size_t count, CommType type, ReduceOp op,
                                       MemoryKind where, const std::string& label) {
  return SubmitInPlace(*engine_, InPlaceKind::kAllreduce, buffer, count, type, op, 0, where, label);
}

CommHandle MpiCommunicator::IReduce(void* buffer, std::size_t count, CommType type, ReduceOp op,
                                    int root, MemoryKind where, const std::string& label) {
  CheckRoot(root, label);
  return SubmitInPlace(*engine_, InPlaceKind::kReduce, buffer, count, type, op, root, where, label);
}

CommHandle MpiCommunicator::IBroadcast(void* buffer, std::size_t count, CommType type, int root,
                                       MemoryKind where, const std::string& label) {
  CheckRoot(root, label);
  return SubmitInPlace(*engine_, InPlaceKind::kBroadcast, buffer, count, type, ReduceOp::kSum, root,
                       where, label);
}

CommHandle MpiCommunicator::IAllgather(const void* send, void* recv, std::size_t count,
                                       CommType type, const std::string& label) {
  DOPPIO_ENSURE(count <= static_cast<std::size_t>(INT_MAX))
      << label << ": " << count << " elements per rank is more than one allgather takes";
  return engine_->Submit(MakeAllgatherOp(send, recv, count, type), label,
                         count * CommTypeSize(type) * size());
}

CommHandle MpiCommunicator::IBarrier(const std::string& label) {
  return engine_->Submit(MakeBarrierOp(), label, 0);
}

CommHandle MpiCommunicator::IGatherv(const void* send, std::size_t bytes, void* recv,
                                     const std::vector<std::size_t>& recv_bytes, int root,
                                     const std::string& label) {
  CheckRoot(root, label);
  std::vector<int> recv_counts, displacements;
  std::size_t total = 0;
  if (rank() == root) {
    DOPPIO_ENSURE(static_cast<int>(recv_bytes.size()) == size())
        << label << ": " << recv_bytes.size() << " receive sizes for " << size() << " ranks";
    for (std::size_t part : recv_bytes) {
      DOPPIO_ENSURE(total + part <= static_cast<std::size_t>(INT_MAX))
          << label << ": more than 2 GiB gathered";
      recv_counts.push_back(static_cast<int>(part));
      displacements.push_back(static_cast<int>(total));
      total += part;
    }
  }
  DOPPIO_ENSURE(bytes <= static_cast<std::size_t>(INT_MAX))
      << label << ": more than 2 GiB from one rank";
  return engine_->Submit(
      MakeGathervOp(send, bytes, recv, std::move(recv_counts), std::move(displacements), root),
      label, bytes);
}

void MpiCommunicator::Poke() { engine_->Poke(); }

void MpiCommunicator::set_timeout(double seconds) { engine_->watchdog().set_timeout(seconds); }

double MpiCommunicator::timeout() const { return engine_->watchdog().timeout(); }

void MpiCommunicator::Abort(int exit_code) { AbortJob(exit_code); }

std::shared_ptr<Communicator> MakeJobCommunicator() {
  const char* forced = std::getenv("DOPPIO_MPI");
  const bool use_mpi = forced != nullptr && *forced != '\0' ? std::string(forced) != "0"
                                                            : MpiCommunicator::LaunchedByMpi();
  if (use_mpi) return std::make_shared<MpiCommunicator>();
  return std::make_shared<SelfCommunicator>();
}

}  // namespace doppio
