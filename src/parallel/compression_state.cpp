#include "doppio/parallel/compression_state.hpp"

#include <glog/logging.h>

#include <type_traits>

namespace doppio {

namespace {

template <typename Dtype>
void ToBlob(const std::vector<Dtype>& values, BlobProto* blob) {
  blob->mutable_shape()->add_dim(static_cast<std::int64_t>(values.size()));
  for (Dtype value : values) {
    if (std::is_same<Dtype, double>::value) {
      blob->add_double_data(value);
    } else {
      blob->add_data(static_cast<float>(value));
    }
  }
}

template <typename Dtype>
std::vector<Dtype> FromBlob(const BlobProto& blob) {
  if (blob.double_data_size() > 0) {
    return std::vector<Dtype>(blob.double_data().begin(), blob.double_data().end());
  }
  return std::vector<Dtype>(blob.data().begin(), blob.data().end());
}

}  // namespace

template <typename Dtype>
void GatherCompressionState(Communicator& comm, const GradientSync<Dtype>& sync,
                            CompressionState* state) {
  if (!sync.compressing() || !sync.compression().stateful()) return;
  BlobProto mine;
  ToBlob(sync.CompressionResidual(), &mine);
  const std::vector<std::string> all =
      comm.GatherBytes(mine.SerializeAsString(), 0, "compression residuals");
  if (comm.rank() != 0) return;
  state->Clear();
  state->set_method(sync.compression().text);
  state->set_num_ranks(comm.size());
  for (const std::string& bytes : all) {
    if (!state->add_residual()->ParseFromString(bytes)) {
      throw Error("compression state: a rank's residuals did not parse");
    }
  }
  const std::vector<Dtype> shared = sync.CompressionShared();
  if (!shared.empty()) ToBlob(shared, state->mutable_shared());
}

template <typename Dtype>
void RestoreCompressionState(const SolverState& saved, int num_ranks, int rank,
                             const std::string& origin, GradientSync<Dtype>* sync) {
  const bool wanted = sync->compressing() && sync->compression().stateful();
  if (!saved.has_compression()) {
    if (wanted) {
      LOG(INFO) << origin << " holds no state of --grad_compression=" << sync->compression().text
                << ": its residuals start at zero";
    }
    return;
  }
  const CompressionState& state = saved.compression();
  if (!wanted || state.method() != sync->compression().text) {
    LOG(WARNING) << origin << " holds the state of --grad_compression=" << state.method()
                 << ", which this run ("
                 << (sync->compressing() ? "--grad_compression=" + sync->compression().text
                                         : std::string("uncompressed"))
                 << ") does not use: ignored";
    return;
  }
  DOPPIO_ENSURE(state.num_ranks() >= 1 && state.residual_size() == state.num_ranks())
      << origin << ": the compression state has " << state.residual_size() << " residuals for "
      << state.num_ranks() << " ranks";
  if (!state.has_shared() && !sync->CompressionShared().empty() &&
      state.method().rfind("topk:", 0) == 0) {
    // Written before top-k corrected momentum: its residuals lack the velocity (and the last
    // step's mean) that this run keeps beside them, and they cannot be split by bucket here.
    // The weights and the solver's history are restored; the owed gradient is dropped.
    LOG_IF(WARNING, rank == 0)
        << origin << " holds --grad_compression=" << state.method()
        << " residuals written before top-k's momentum correction: they start at zero, so "
        << "the run does not repeat an uninterrupted one";
    sync->SetCompressionResidual(std::vector<Dtype>(sync->CompressionResidual().size()));
    sync->SetCompressionShared(std::vector<Dtype>(sync->CompressionShared().size()));
    return;
  }
  const std::size_t expected = sync->CompressionResidual().size();
  std::vector<std::vector<Dtype>> residuals;
  for (const BlobProto& blob : state.residual()) {
    residuals.push_back(FromBlob<Dtype>(blob));
    DOPPIO_ENSURE(residuals.back().size() == expected)
        << origin << ": a compression residual of " << residuals.back().size()
        << " values, where this net's gradient buckets hold " << expected
        << " (another net or --bucket_mb?)";
  }
  std::vector<Dtype> residual;
  if (state.num_ranks() == num_ranks) {
    residual = residuals[rank];
  } else {
    // The mean of the ranks' gradients took 1/N of each residual; each of the new ranks
    // takes the mean residual, so that their mean gets the same.
    residual.assign(expected, Dtype(0));
    for (const std::vector<Dtype>& saved_residual : residuals) {
      for (std::size_t i = 0; i < expected; ++i) residual[i] += saved_residual[i];
    }
    for (Dtype& value : residual) value /= state.num_ranks();
    LOG_IF(WARNING, rank == 0) << origin << " was written by " << state.num_ranks()
                               << " ranks, this run has " << num_ranks
                               << ": every rank starts from the mean of their --grad_compression="
                               << state.method()
                               << " residuals (the same owed gradient in the mean), so the run "
                               << "does not repeat an uninterrupted one";
  }
  sync->SetCompressionResidual(residual);
  const std::vector<Dtype> shared =
      state.has_shared() ? FromBlob<Dtype>(state.shared()) : std::vector<Dtype>();
  DOPPIO_ENSURE(shared.size() == sync->CompressionShared().size())
      << origin << ": the compression state has " << shared.size()
      << " values of shared state (PowerSGD's Q, top-k's last step), where this net's gradient "
         "buckets hold "
      << sync->CompressionShared().size();
  sync->SetCompressionShared(shared);
  LOG_IF(INFO, rank == 0) << "Restored the --grad_compression=" << state.method()
                          << " state (residuals of " << state.num_ranks() << " rank"
                          << (state.num_ranks() == 1 ? "" : "s")
                          << (shared.empty() ? "" : ", shared state") << ") from " << origin;
}

template void GatherCompressionState(Communicator&, const GradientSync<float>&, CompressionState*);
template void GatherCompressionState(Communicator&, const GradientSync<double>&, CompressionState*);
template void RestoreCompressionState(const SolverState&, int, int, const std::string&,
                                      GradientSync<float>*);
template void RestoreCompressionState(const SolverState&, int, int, const std::string&,
                                      GradientSync<double>*);

}  // namespace doppio
