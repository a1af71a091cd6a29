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
  using Field = typename GradientSync<Dtype>::StateField;
  CompressionState mine;
  ToBlob(sync.CompressionState(Field::kResidual), mine.add_residual());
  const std::vector<Dtype> velocity = sync.CompressionState(Field::kVelocity);
  if (!velocity.empty()) ToBlob(velocity, mine.add_velocity());
  const std::vector<std::string> all =
      comm.GatherBytes(mine.SerializeAsString(), 0, "compression residuals");
  if (comm.rank() != 0) return;
  state->Clear();
  state->set_method(sync.compression().text);
  state->set_num_ranks(comm.size());
  state->set_version(1);
  if (sync.compression().method == GradCompression::Method::kTopK) {
    state->set_momentum(sync.corrected_momentum());
  }
  for (const std::string& bytes : all) {
    CompressionState rank;
    if (!rank.ParseFromString(bytes) || rank.residual_size() != 1) {
      throw Error("compression state: a rank's residuals did not parse");
    }
    *state->add_residual() = rank.residual(0);
    if (rank.velocity_size() == 1) *state->add_velocity() = rank.velocity(0);
  }
  const std::vector<Dtype> shared = sync.CompressionState(Field::kShared);
  if (!shared.empty()) ToBlob(shared, state->mutable_shared());
}

namespace {

// A method's canonical text; an old file's text that no longer parses stays as it is.
std::string CanonicalMethod(const std::string& text) {
  try {
    return ParseGradCompression(text).text;
  } catch (const Error&) {
    return text;
  }
}

// One rank's saved residual and velocity (empty without), from either version: version 0
// wrote top-k's velocity after the residual in one blob, twice its length.
template <typename Dtype>
void SplitRank(const CompressionState& state, int r, std::size_t count, const std::string& origin,
               std::vector<Dtype>* residual, std::vector<Dtype>* velocity) {
  *residual = FromBlob<Dtype>(state.residual(r));
  velocity->clear();
  if (state.version() >= 1) {
    if (r < state.velocity_size()) *velocity = FromBlob<Dtype>(state.velocity(r));
  } else if (residual->size() == 2 * count) {
    velocity->assign(residual->begin() + static_cast<std::ptrdiff_t>(count), residual->end());
    residual->resize(count);
  }
  DOPPIO_ENSURE(residual->size() == count)
      << origin << ": a compression residual of " << residual->size()
      << " values, where this net's gradient buckets hold " << count
      << " (another net or --bucket_mb?)";
  DOPPIO_ENSURE(velocity->empty() || velocity->size() == count)
      << origin << ": a top-k velocity of " << velocity->size()
      << " values, where this net's gradient buckets hold " << count;
}

// The mean over the ranks' vectors, for a run on another number of ranks.
template <typename Dtype>
std::vector<Dtype> Mean(const std::vector<std::vector<Dtype>>& ranks) {
  std::vector<Dtype> mean(ranks[0].size(), Dtype(0));
  for (const std::vector<Dtype>& values : ranks) {
    for (std::size_t i = 0; i < mean.size(); ++i) mean[i] += values[i];
  }
  for (Dtype& value : mean) value /= static_cast<Dtype>(ranks.size());
  return mean;
}

}  // namespace

template <typename Dtype>
void RestoreCompressionState(const SolverState& saved, int num_ranks, int rank,
                             const std::string& origin, GradientSync<Dtype>* sync) {
  using Field = typename GradientSync<Dtype>::StateField;
  const bool wanted = sync->compressing() && sync->compression().stateful();
  if (!saved.has_compression()) {
    if (wanted) {
      LOG(INFO) << origin << " holds no state of --grad_compression=" << sync->compression().text
                << ": its residuals start at zero";
    }
    return;
  }
  const CompressionState& state = saved.compression();
  const std::string method = CanonicalMethod(state.method());
  if (!wanted || method != sync->compression().text) {
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
  DOPPIO_ENSURE(state.velocity_size() == 0 || state.velocity_size() == state.num_ranks())
      << origin << ": the compression state has " << state.velocity_size() << " velocities for "
      << state.num_ranks() << " ranks";
  const std::size_t count = sync->CompressionState(Field::kResidual).size();
  std::vector<std::vector<Dtype>> residuals(state.num_ranks()), velocities(state.num_ranks());
  for (int r = 0; r < state.num_ranks(); ++r) {
    SplitRank(state, r, count, origin, &residuals[r], &velocities[r]);
  }
  const bool saved_velocity = !velocities[0].empty();
  for (const auto& velocity : velocities) {
    DOPPIO_ENSURE(velocity.empty() != saved_velocity)
        << origin << ": some ranks' top-k state holds a velocity and some not";
  }
  const bool same_ranks = state.num_ranks() == num_ranks;
  if (!same_ranks) {
    // The mean of the ranks' gradients took 1/N of each residual; each of the new ranks
    // takes the mean residual, so that their mean gets the same.
    LOG_IF(WARNING, rank == 0) << origin << " was written by " << state.num_ranks()
                               << " ranks, this run has " << num_ranks
                               << ": every rank starts from the mean of their --grad_compression="
                               << method
                               << " residuals (the same owed gradient in the mean), so the run "
                               << "does not repeat an uninterrupted one";
  }
  const auto take = [&](const std::vector<std::vector<Dtype>>& values) {
    return same_ranks ? values[rank] : Mean(values);
  };
  sync->SetCompressionState(Field::kResidual, take(residuals));

  // Top-k's momentum correction: its velocity and last step are there in the file and in this
  // run, in one of them only (another solver, LARC: top-k corrects the SGD solver's momentum
  // only), or in neither.
  const bool corrects = sync->corrected_momentum() > 0;
  const std::string saved_momentum =
      state.has_momentum() ? std::to_string(state.momentum()) : std::string("unrecorded");
  std::vector<Dtype> shared =
      state.has_shared() ? FromBlob<Dtype>(state.shared()) : std::vector<Dtype>();
  const bool topk = sync->compression().method == GradCompression::Method::kTopK;
  if (topk && saved_velocity && !corrects) {
    LOG_IF(WARNING, rank == 0)
        << origin << " holds --grad_compression=" << method
        << " state with the momentum correction (momentum " << saved_momentum
        << "); this run corrects no momentum (top-k corrects the SGD solver's momentum, "
           "without LARC): the residuals are restored, the velocities and the last step dropped";
    shared.clear();
  } else if (topk && !saved_velocity && corrects) {
    LOG_IF(WARNING, rank == 0)
        << origin << " holds --grad_compression=" << method
        << " state without the momentum correction; this run corrects momentum "
        << sync->corrected_momentum()
        << ": the residuals are restored, the velocities and the last step start at zero";
    sync->SetCompressionState(Field::kVelocity, std::vector<Dtype>(count, Dtype(0)));
    shared.assign(sync->CompressionState(Field::kShared).size(), Dtype(0));
  } else if (saved_velocity) {
    sync->SetCompressionState(Field::kVelocity, take(velocities));
    LOG_IF(INFO,
           rank == 0 && state.has_momentum() && state.momentum() != sync->corrected_momentum())
        << origin << ": top-k's velocities, written under momentum " << state.momentum()
        << ", go on under momentum " << sync->corrected_momentum();
  }
  DOPPIO_ENSURE(shared.size() == sync->CompressionState(Field::kShared).size())
      << origin << ": the compression state has " << shared.size()
      << " values of shared state (PowerSGD's Q, top-k's last step), where this net's gradient "
         "buckets hold "
      << sync->CompressionState(Field::kShared).size();
  sync->SetCompressionState(Field::kShared, shared);
  LOG_IF(INFO, rank == 0) << "Restored the --grad_compression=" << method << " state (residuals of "
                          << state.num_ranks() << " rank" << (state.num_ranks() == 1 ? "" : "s")
                          << (saved_velocity && corrects ? ", velocities" : "")
                          << (shared.empty() ? "" : ", shared state") << ") from " << origin;
}

template void GatherCompressionState(Communicator&, const GradientSync<float>&, CompressionState*);
template void GatherCompressionState(Communicator&, const GradientSync<double>&, CompressionState*);
template void RestoreCompressionState(const SolverState&, int, int, const std::string&,
                                      GradientSync<float>*);
template void RestoreCompressionState(const SolverState&, int, int, const std::string&,
                                      GradientSync<double>*);

}  // namespace doppio
