#include "doppio/util/snapshot_files.hpp"

#include <climits>
#include <cstdlib>
#include <map>
#include <set>
#include <vector>

#include "doppio/util/hdf5.hpp"
#include "doppio/util/io.hpp"
#include "doppio/util/upgrade_net.hpp"

namespace doppio {

namespace {

// The blob's shape, from its legacy 4-d fields where it has no shape.
std::vector<int> ShapeOf(const BlobProto& blob) {
  if (blob.has_shape()) {
    std::vector<int> shape;
    for (std::int64_t d : blob.shape().dim()) shape.push_back(static_cast<int>(d));
    return shape;
  }
  return {blob.num(), blob.channels(), blob.height(), blob.width()};
}

void WriteBlob(Hdf5Writer* file, const std::string& name, const BlobProto& blob, bool diff) {
  const std::vector<int> shape = ShapeOf(blob);
  if (diff) {
    if (blob.double_diff_size() > 0) {
      file->Write(name, shape, blob.double_diff().data());
    } else {
      file->Write(name, shape, blob.diff().data());
    }
  } else if (blob.double_data_size() > 0) {
    file->Write(name, shape, blob.double_data().data());
  } else {
    file->Write(name, shape, blob.data().data());
  }
}

void ReadBlob(const Hdf5Reader& file, const std::string& name, BlobProto* blob) {
  for (std::uint64_t d : file.Shape(name)) {
    if (d > static_cast<std::uint64_t>(INT_MAX)) {
      throw Error(file.path() + ", dataset '" + name + "': axis of " + std::to_string(d) +
                  " is too long for a blob");
    }
    blob->mutable_shape()->add_dim(static_cast<std::int64_t>(d));
  }
  if (file.IsDouble(name)) {
    const std::vector<double> values = file.Read<double>(name);
    blob->mutable_double_data()->Add(values.begin(), values.end());
  } else {
    const std::vector<float> values = file.Read<float>(name);
    blob->mutable_data()->Add(values.begin(), values.end());
  }
}

// The members of `group` named by indices 0..n-1, in index order; Error for a gap or a name
// that is not an index (`what` names the group's role in messages).
std::vector<std::string> IndexedMembers(const Hdf5Reader& file, const std::string& group,
                                        const std::vector<std::string>& names,
                                        const std::string& what) {
  std::map<long, std::string> by_index;
  for (const std::string& name : names) {
    char* end = nullptr;
    const long index = std::strtol(name.c_str(), &end, 10);
    if (name.empty() || *end != '\0' || index < 0) {
      throw Error(file.path() + ": " + what + " holds '" + name +
                  "', which is not a blob index (0, 1, ...)");
    }
    by_index[index] = group + "/" + name;
  }
  std::vector<std::string> ordered;
  for (const auto& [index, path] : by_index) {
    if (index != static_cast<long>(ordered.size())) {
      throw Error(file.path() + ": " + what + " holds blob " + std::to_string(index) +
                  " but not blob " + std::to_string(ordered.size()) +
                  " (Caffe leaves out the blobs a layer shares with another; every blob of a "
                  "layer is needed)");
    }
    ordered.push_back(path);
  }
  return ordered;
}

// The layers under `group` (a group per layer, nested where the name has '/'), each with the
// datasets of its blobs.
void ReadLayerGroups(const Hdf5Reader& file, const std::string& group, const std::string& prefix,
                     NetParameter* weights) {
  std::vector<std::string> blobs;
  for (const std::string& member : file.Members(group)) {
    const std::string path = group + "/" + member;
    if (file.IsGroup(path)) {
      ReadLayerGroups(file, path, prefix + member + "/", weights);
    } else {
      blobs.push_back(member);
    }
  }
  if (blobs.empty() || prefix.empty()) {
    if (!blobs.empty()) {
      throw Error(file.path() + ": dataset '" + group + "/" + blobs[0] +
                  "' is outside any layer's group (Caffe's layout: /data/<layer>/<blob index>)");
    }
    return;
  }
  LayerParameter* layer = weights->add_layer();
  layer->set_name(prefix.substr(0, prefix.size() - 1));
  for (const std::string& path :
       IndexedMembers(file, group, blobs, "layer '" + layer->name() + "'")) {
    ReadBlob(file, path, layer->add_blobs());
  }
}

void ReadWeightsHdf5(const std::string& path, NetParameter* weights) {
  Hdf5Reader file(path);
  DOPPIO_ENSURE(file.IsGroup("data"))
      << path << ": not HDF5 weights (it has no group 'data'; Caffe's layout is "
      << "/data/<layer>/<blob index>)";
  ReadLayerGroups(file, "data", "", weights);
}

void WriteWeightsHdf5(const NetParameter& weights, const std::string& path) {
  Hdf5Writer file;
  file.CreateGroup("data");
  bool diffs = false;
  for (const LayerParameter& layer : weights.layer()) {
    for (const BlobProto& blob : layer.blobs()) {
      diffs = diffs || blob.diff_size() > 0 || blob.double_diff_size() > 0;
    }
  }
  if (diffs) file.CreateGroup("diff");
  std::set<std::string> groups, with_blobs;
  for (const LayerParameter& layer : weights.layer()) {
    if (layer.blobs_size() > 0 && !with_blobs.insert(layer.name()).second) {
      throw Error(path + ": two layers named '" + layer.name() +
                  "' have weights, and Caffe's HDF5 layout holds one layer per name; rename "
                  "one, or use snapshot_format: BINARYPROTO");
    }
    // Caffe makes a group for every layer, with weights or not.
    if (groups.insert(layer.name()).second) {
      file.CreateGroup("data/" + layer.name());
      if (diffs) file.CreateGroup("diff/" + layer.name());
    }
    for (int j = 0; j < layer.blobs_size(); ++j) {
      const std::string index = "/" + std::to_string(j);
      WriteBlob(&file, "data/" + layer.name() + index, layer.blobs(j), false);
      if (diffs) WriteBlob(&file, "diff/" + layer.name() + index, layer.blobs(j), true);
    }
  }
  WriteFileAtomically(file.Image(), path);
}

void ReadSolverStateHdf5(const std::string& path, SolverState* state) {
  Hdf5Reader file(path);
  DOPPIO_ENSURE(file.Has("iter") && file.Has("learned_net"))
      << path << ": not an HDF5 solver state (it has no iter or learned_net)";
  const std::int64_t iter = file.ReadInt("iter");
  DOPPIO_ENSURE(iter >= INT_MIN && iter <= INT_MAX) << path << ": iter " << iter << " is too large";
  state->set_iter(static_cast<int>(iter));
  state->set_learned_net(file.ReadString("learned_net"));
  if (file.Has("current_step")) {
    state->set_current_step(static_cast<int>(file.ReadInt("current_step")));
  }
  if (file.Has("history")) {
    for (const std::string& blob :
         IndexedMembers(file, "history", file.Members("history"), "group 'history'")) {
      ReadBlob(file, blob, state->add_history());
    }
  }
  if (file.Has("doppio/history_in_caffe_order")) {
    state->set_history_in_caffe_order(file.ReadInt("doppio/history_in_caffe_order") != 0);
  }
  if (file.Has("doppio/data_position")) {
    const std::string group = "doppio/data_position";
    for (const std::string& entry :
         IndexedMembers(file, group, file.Members(group), "group '" + group + "'")) {
      DataPosition* position = state->add_data_position();
      position->set_layer(file.ReadString(entry + "/layer"));
      position->set_position(static_cast<std::uint64_t>(file.ReadInt(entry + "/position")));
    }
  }
  if (file.Has("doppio/compression")) {
    CompressionState* compression = state->mutable_compression();
    compression->set_method(file.ReadString("doppio/compression/method"));
    compression->set_num_ranks(static_cast<int>(file.ReadInt("doppio/compression/num_ranks")));
    const std::string group = "doppio/compression/residual";
    for (const std::string& blob :
         IndexedMembers(file, group, file.Members(group), "group '" + group + "'")) {
      ReadBlob(file, blob, compression->add_residual());
    }
    if (file.Has("doppio/compression/shared")) {
      ReadBlob(file, "doppio/compression/shared", compression->mutable_shared());
    }
    if (file.Has("doppio/compression/version")) {
      compression->set_version(static_cast<int>(file.ReadInt("doppio/compression/version")));
    }
    if (file.Has("doppio/compression/momentum")) {
      const std::vector<double> momentum = file.Read<double>("doppio/compression/momentum");
      DOPPIO_ENSURE(momentum.size() == 1)
          << path << ", dataset 'doppio/compression/momentum': " << momentum.size()
          << " values, not 1";
      compression->set_momentum(momentum[0]);
    }
    if (file.Has("doppio/compression/velocity")) {
      const std::string velocities = "doppio/compression/velocity";
      for (const std::string& blob : IndexedMembers(file, velocities, file.Members(velocities),
                                                    "group '" + velocities + "'")) {
        ReadBlob(file, blob, compression->add_velocity());
      }
    }
  }
  if (file.Has("doppio/loss_scale")) {
    const std::vector<float> scale = file.Read<float>("doppio/loss_scale");
    DOPPIO_ENSURE(scale.size() == 1)
        << path << ", dataset 'doppio/loss_scale': " << scale.size() << " values, not 1";
    state->set_loss_scale(scale[0]);
    if (file.Has("doppio/loss_scale_clean_updates")) {
      const std::int64_t clean = file.ReadInt("doppio/loss_scale_clean_updates");
      DOPPIO_ENSURE(clean >= 0 && clean <= INT_MAX)
          << path << ", dataset 'doppio/loss_scale_clean_updates': " << clean << " is out of range";
      state->set_loss_scale_clean_updates(static_cast<int>(clean));
    }
  }
}

void WriteSolverStateHdf5(const SolverState& state, const std::string& path) {
  Hdf5Writer file;
  file.WriteInt("iter", state.iter());
  file.WriteString("learned_net", state.learned_net());
  file.WriteInt("current_step", state.current_step());
  file.CreateGroup("history");
  for (int i = 0; i < state.history_size(); ++i) {
    WriteBlob(&file, "history/" + std::to_string(i), state.history(i), false);
  }
  if (state.has_history_in_caffe_order()) {
    file.WriteInt("doppio/history_in_caffe_order", state.history_in_caffe_order());
  }
  for (int i = 0; i < state.data_position_size(); ++i) {
    const std::string entry = "doppio/data_position/" + std::to_string(i);
    file.WriteString(entry + "/layer", state.data_position(i).layer());
    file.WriteInt(entry + "/position",
                  static_cast<std::int64_t>(state.data_position(i).position()));
  }
  if (state.has_compression()) {
    const CompressionState& compression = state.compression();
    file.WriteString("doppio/compression/method", compression.method());
    file.WriteInt("doppio/compression/num_ranks", compression.num_ranks());
    file.CreateGroup("doppio/compression/residual");
    for (int i = 0; i < compression.residual_size(); ++i) {
      WriteBlob(&file, "doppio/compression/residual/" + std::to_string(i), compression.residual(i),
                false);
    }
    if (compression.has_shared()) {
      WriteBlob(&file, "doppio/compression/shared", compression.shared(), false);
    }
    if (compression.has_version()) {
      file.WriteInt("doppio/compression/version", compression.version());
    }
    if (compression.has_momentum()) {
      const double momentum = compression.momentum();
      file.Write("doppio/compression/momentum", {1}, &momentum);
    }
    if (compression.velocity_size() > 0) {
      file.CreateGroup("doppio/compression/velocity");
      for (int i = 0; i < compression.velocity_size(); ++i) {
        WriteBlob(&file, "doppio/compression/velocity/" + std::to_string(i),
                  compression.velocity(i), false);
      }
    }
  }
  if (state.has_loss_scale()) {
    const float scale = state.loss_scale();
    file.Write("doppio/loss_scale", {1}, &scale);
    file.WriteInt("doppio/loss_scale_clean_updates", state.loss_scale_clean_updates());
  }
  WriteFileAtomically(file.Image(), path);
}

}  // namespace

void ReadWeightsFile(const std::string& path, NetParameter* weights) {
  if (IsHdf5Path(path)) {
    ReadWeightsHdf5(path, weights);
    return;
  }
  ReadProtoFromBinaryFile(path, weights);
  UpgradeNetAsNeeded(path, weights);
}

void WriteWeightsFile(const NetParameter& weights, const std::string& path) {
  if (IsHdf5Path(path)) {
    WriteWeightsHdf5(weights, path);
  } else {
    WriteProtoToBinaryFile(weights, path);
  }
}

void ReadSolverStateFile(const std::string& path, SolverState* state) {
  if (IsHdf5Path(path)) {
    ReadSolverStateHdf5(path, state);
  } else {
    ReadProtoFromBinaryFile(path, state);
  }
}

void WriteSolverStateFile(const SolverState& state, const std::string& path) {
  if (IsHdf5Path(path)) {
    WriteSolverStateHdf5(state, path);
  } else {
    WriteProtoToBinaryFile(state, path);
  }
}

}  // namespace doppio
