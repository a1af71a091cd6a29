#include "mpi_ops.hpp"

#include <algorithm>

#include "doppio/parallel/mpi_communicator.hpp"

namespace doppio {

namespace {

// Open MPI's non-blocking reduce and broadcast (coll/libnbc) cut a message into small
// segments and move from one segment to the next by recursion in the thread that progresses
// them, about one level per segment: over TCP, reducing AlexNet's 150 MB fc6 gradient to
// rank 0 overflowed the communication thread's 8 MB stack (SIGSEGV in
// opal_convertor_unpack under thousands of NBC_Progress frames). Pieces of at most
// kMpiRootedPieceBytes (4 MB) keep that recursion shallow. An allreduce (libnbc's ring, which
// does not recurse so) is cut into pieces for the link's sake: see kMpiAllreducePieceBytes.

// An operation of MPI requests, complete when all of them are.
class RequestsOp : public MpiOp {
 public:
  bool Progress(MpiEngine& engine) override {
    int done = 0;
    engine.Check(MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &done,
                             MPI_STATUSES_IGNORE),
                 handle->label());
    return done != 0;
  }

 protected:
  void Add(MPI_Request request) { requests_.push_back(request); }

 private:
  std::vector<MPI_Request> requests_;
};

class InPlaceOp : public RequestsOp {
 public:
  InPlaceOp(InPlaceKind kind, void* buffer, std::size_t count, CommType type, ReduceOp op, int root)
      : kind_(kind),
        buffer_(static_cast<char*>(buffer)),
        count_(count),
        type_(type),
        op_(op),
        root_(root) {}

  void Start(MpiEngine& engine) override {
    const std::size_t element = CommTypeSize(type_);
    const std::size_t piece_bytes =
        kind_ == InPlaceKind::kAllreduce ? kMpiAllreducePieceBytes : kMpiRootedPieceBytes;
    const std::size_t max_piece = std::max<std::size_t>(1, piece_bytes / element);
    for (std::size_t offset = 0; offset < count_; offset += max_piece) {
      const int piece = static_cast<int>(std::min(max_piece, count_ - offset));
      Add(Issue(engine, buffer_ + offset * element, piece));
    }
  }

 private:
  MPI_Request Issue(MpiEngine& engine, void* at, int piece) {
    const MPI_Datatype datatype = ToMpi(type_);
    MPI_Request request;
    switch (kind_) {
      case InPlaceKind::kAllreduce:
        engine.Check(
            MPI_Iallreduce(MPI_IN_PLACE, at, piece, datatype, ToMpi(op_), engine.comm(), &request),
            handle->label());
        break;
      case InPlaceKind::kReduce: {
        const bool is_root = engine.rank() == root_;
        engine.Check(MPI_Ireduce(is_root ? MPI_IN_PLACE : at, is_root ? at : nullptr, piece,
                                 datatype, ToMpi(op_), root_, engine.comm(), &request),
                     handle->label());
        break;
      }
      case InPlaceKind::kBroadcast:
        engine.Check(MPI_Ibcast(at, piece, datatype, root_, engine.comm(), &request),
                     handle->label());
        break;
    }
    return request;
  }

  InPlaceKind kind_;
  char* buffer_;
  std::size_t count_;
  CommType type_;
  ReduceOp op_;
  int root_;
};

class AllgatherOp : public RequestsOp {
 public:
  AllgatherOp(const void* send, void* recv, std::size_t count, CommType type)
      : send_(send), recv_(recv), count_(static_cast<int>(count)), type_(type) {}

  void Start(MpiEngine& engine) override {
    MPI_Request request;
    engine.Check(MPI_Iallgather(send_, count_, ToMpi(type_), recv_, count_, ToMpi(type_),
                                engine.comm(), &request),
                 handle->label());
    Add(request);
  }

 private:
  const void* send_;
  void* recv_;
  int count_;
  CommType type_;
};

class BarrierOp : public RequestsOp {
 public:
  void Start(MpiEngine& engine) override {
    MPI_Request request;
    engine.Check(MPI_Ibarrier(engine.comm(), &request), handle->label());
    Add(request);
  }
};

class GathervOp : public RequestsOp {
 public:
  GathervOp(const void* send, std::size_t bytes, void* recv, std::vector<int> recv_counts,
            std::vector<int> displacements, int root)
      : send_(send),
        bytes_(static_cast<int>(bytes)),
        recv_(recv),
        recv_counts_(std::move(recv_counts)),
        displacements_(std::move(displacements)),
        root_(root) {}

  void Start(MpiEngine& engine) override {
    MPI_Request request;
    engine.Check(MPI_Igatherv(send_, bytes_, MPI_BYTE, recv_, recv_counts_.data(),
                              displacements_.data(), MPI_BYTE, root_, engine.comm(), &request),
                 handle->label());
    Add(request);
  }

 private:
  const void* send_;
  int bytes_;
  void* recv_;
  std::vector<int> recv_counts_, displacements_;
  int root_;
};

}  // namespace

MPI_Datatype ToMpi(CommType type) {
  switch (type) {
    case CommType::kFloat:
      return MPI_FLOAT;
    case CommType::kDouble:
      return MPI_DOUBLE;
    case CommType::kInt32:
      return MPI_INT32_T;
    case CommType::kInt64:
      return MPI_INT64_T;
    case CommType::kUInt64:
      return MPI_UINT64_T;
    case CommType::kByte:
      return MPI_BYTE;
  }
  return MPI_BYTE;
}

MPI_Op ToMpi(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return MPI_SUM;
    case ReduceOp::kMax:
      return MPI_MAX;
    case ReduceOp::kMin:
      return MPI_MIN;
  }
  return MPI_SUM;
}

std::unique_ptr<MpiOp> MakeInPlaceOp(InPlaceKind kind, void* buffer, std::size_t count,
                                     CommType type, ReduceOp op, int root) {
  return std::make_unique<InPlaceOp>(kind, buffer, count, type, op, root);
}

std::unique_ptr<MpiOp> MakeAllgatherOp(const void* send, void* recv, std::size_t count,
                                       CommType type) {
  return std::make_unique<AllgatherOp>(send, recv, count, type);
}

std::unique_ptr<MpiOp> MakeBarrierOp() { return std::make_unique<BarrierOp>(); }

std::unique_ptr<MpiOp> MakeGathervOp(const void* send, std::size_t bytes, void* recv,
                                     std::vector<int> recv_counts, std::vector<int> displacements,
                                     int root) {
  return std::make_unique<GathervOp>(send, bytes, recv, std::move(recv_counts),
                                     std::move(displacements), root);
}

}  // namespace doppio
