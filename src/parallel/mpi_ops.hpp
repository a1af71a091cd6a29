#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "doppio/parallel/communicator.hpp"
#include "mpi_engine.hpp"

namespace doppio {

MPI_Datatype ToMpi(CommType type);
MPI_Op ToMpi(ReduceOp op);

// The collectives in place on one buffer. Allreduce ignores the root; reduce leaves the
// result in root's buffer and only reads the others'; broadcast copies root's buffer.
enum class InPlaceKind { kAllreduce, kReduce, kBroadcast };

// The host collectives, each one MpiOp, all of whose MPI calls are issued at once.
// Buffers are split into pieces (kMpiAllreducePieceBytes, kMpiRootedPieceBytes), all issued
// at once.
std::unique_ptr<MpiOp> MakeInPlaceOp(InPlaceKind kind, void* buffer, std::size_t count,
                                     CommType type, ReduceOp op, int root);
std::unique_ptr<MpiOp> MakeAllgatherOp(const void* send, void* recv, std::size_t count,
                                       CommType type);
std::unique_ptr<MpiOp> MakeBarrierOp();
// recv_counts and displacements (bytes, one per rank) matter on root only.
std::unique_ptr<MpiOp> MakeGathervOp(const void* send, std::size_t bytes, void* recv,
                                     std::vector<int> recv_counts, std::vector<int> displacements,
                                     int root);

}  // namespace doppio
