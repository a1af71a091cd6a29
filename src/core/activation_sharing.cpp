#include "doppio/core/activation_sharing.hpp"

#include <glog/logging.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>

#include "doppio/util/memory_usage.hpp"

namespace doppio {

namespace {

// A buffer to place and the steps it is alive in (from its first use to its last, both
// included); a kept one stays apart.
struct Interval {
  std::size_t bytes = 0;
  int first = -1;
  int last = -1;
  bool kept = false;
};

struct SlotPlan {
  std::vector<std::size_t> slot_bytes;
  std::vector<int> slot_of;  // per interval, -1 where it stays apart
  std::size_t unshared = 0;  // what the placed intervals took apart
  std::size_t shared = 0;    // what their slots take
};

// Greedy, in the order the intervals start (they come sorted so): each takes the slot that
// fits it best among those whose last occupant's interval has ended; a slot grows to its
// largest occupant.
SlotPlan PlanSlots(const std::vector<Interval>& intervals) {
  SlotPlan plan;
  std::vector<int> free_after;  // per slot, the last step of its latest occupant
  plan.slot_of.assign(intervals.size(), -1);
  for (std::size_t b = 0; b < intervals.size(); ++b) {
    const Interval& buffer = intervals[b];
    if (buffer.kept) continue;
    plan.unshared += buffer.bytes;
    int best = -1;
    for (std::size_t s = 0; s < plan.slot_bytes.size(); ++s) {
      if (free_after[s] >= buffer.first) continue;
      // Prefer the smallest slot that fits, else the largest (it grows least).
      const bool fits = plan.slot_bytes[s] >= buffer.bytes;
      if (best < 0) {
        best = static_cast<int>(s);
        continue;
      }
      const bool best_fits = plan.slot_bytes[best] >= buffer.bytes;
      if ((fits && (!best_fits || plan.slot_bytes[s] < plan.slot_bytes[best])) ||
          (!fits && !best_fits && plan.slot_bytes[s] > plan.slot_bytes[best])) {
        best = static_cast<int>(s);
      }
    }
    if (best < 0) {
      best = static_cast<int>(plan.slot_bytes.size());
      plan.slot_bytes.push_back(0);
      free_after.push_back(-1);
    }
    plan.slot_bytes[best] = std::max(plan.slot_bytes[best], buffer.bytes);
    free_after[best] = buffer.last;
    plan.slot_of[b] = best;
  }
  for (std::size_t bytes : plan.slot_bytes) plan.shared += bytes;
  return plan;
}

// Gives each placed group's blobs a view of its slot (`set`: SetDataMemory or SetDiffMemory),
// logs what `what` ("activations") saved, and returns the bytes saved.
template <typename Dtype>
std::size_t ApplyPlan(const Net<Dtype>& net, const char* what, const SlotPlan& plan,
                      const std::vector<std::vector<Blob<Dtype>*>>& groups,
                      void (Blob<Dtype>::*set)(std::shared_ptr<SyncedMemory>)) {
  std::vector<std::shared_ptr<SyncedMemory>> memory;
  for (std::size_t bytes : plan.slot_bytes) {
    memory.push_back(std::make_shared<SyncedMemory>(bytes));
    // Its blobs are alive one at a time, each from byte 0: one may hold 16-bit elements.
    memory.back()->ShareViewsOneAtATime();
  }
  for (std::size_t b = 0; b < groups.size(); ++b) {
    if (plan.slot_of[b] < 0) continue;
    for (Blob<Dtype>* blob : groups[b]) {
      (blob->*set)(std::make_shared<SyncedMemory>(memory[plan.slot_of[b]], 0,
                                                  blob->count() * sizeof(Dtype)));
    }
  }
  LOG(INFO) << "Net '" << net.name() << "' (" << Phase_Name(net.phase()) << "): " << what
            << " that are not alive at once share memory: " << FormatMebibytes(plan.unshared)
            << " in " << plan.slot_bytes.size() << " buffers of " << FormatMebibytes(plan.shared)
            << ", saving " << FormatMebibytes(plan.unshared - plan.shared);
  return plan.unshared - plan.shared;
}

// One buffer of the pass (one or more blobs aliasing it) and when it is alive.
template <typename Dtype>
struct Buffer {
  std::vector<Blob<Dtype>*> blobs;
  std::size_t bytes = 0;
  int first_writer = -1;
  int last_reader = -1;
  bool kept = false;
};

// The net's buffers, keyed by their memory, in the order their first writer runs.
template <typename Dtype>
std::vector<Buffer<Dtype>> CollectBuffers(const Net<Dtype>& net, const std::vector<bool>& kept) {
  std::map<const SyncedMemory*, int> index;
  std::vector<Buffer<Dtype>> buffers;
  const auto touch = [&](int blob_id, int layer_id) -> Buffer<Dtype>& {
    Blob<Dtype>* blob = net.blobs()[blob_id].get();
    auto found = index.emplace(blob->data().get(), static_cast<int>(buffers.size()));
    if (found.second) {
      buffers.emplace_back();
      buffers.back().first_writer = layer_id;
    }
    Buffer<Dtype>& buffer = buffers[found.first->second];
    if (std::find(buffer.blobs.begin(), buffer.blobs.end(), blob) == buffer.blobs.end()) {
      buffer.blobs.push_back(blob);
    }
    buffer.bytes = std::max(buffer.bytes, blob->count() * sizeof(Dtype));
    buffer.last_reader = std::max(buffer.last_reader, layer_id);
    buffer.kept = buffer.kept || kept[blob_id];
    return buffer;
  };
  for (std::size_t layer_id = 0; layer_id < net.layers().size(); ++layer_id) {
    const int id = static_cast<int>(layer_id);
    for (int blob_id : net.bottom_id_vecs()[layer_id]) touch(blob_id, id);
    for (int blob_id : net.top_id_vecs()[layer_id]) {
      touch(blob_id, id).kept |= net.bottom_id_vecs()[layer_id].empty();
    }
  }
  return buffers;
}

}  // namespace

template <typename Dtype>
std::size_t ShareActivationMemory(Net<Dtype>* net, const std::vector<std::string>& keep) {
  std::vector<bool> kept(net->blobs().size(), false);
  for (const std::string& name : keep) {
    DOPPIO_ENSURE(net->has_blob(name))
        << "net '" << net->name() << "' has no blob '" << name << "' to keep apart";
    const auto& names = net->blob_names();
    kept[std::find(names.begin(), names.end(), name) - names.begin()] = true;
  }
  for (int blob_id : net->output_blob_indices()) kept[blob_id] = true;

  std::vector<Buffer<Dtype>> buffers = CollectBuffers(*net, kept);
  std::vector<Interval> intervals;
  for (const Buffer<Dtype>& buffer : buffers) {
    intervals.push_back(
        {buffer.bytes, buffer.first_writer, buffer.last_reader, buffer.kept || buffer.bytes == 0});
  }
  const SlotPlan plan = PlanSlots(intervals);
  std::vector<std::vector<Blob<Dtype>*>> groups;
  for (const Buffer<Dtype>& buffer : buffers) groups.push_back(buffer.blobs);
  return ApplyPlan(*net, "activations", plan, groups, &Blob<Dtype>::SetDataMemory);
}

template <typename Dtype>
std::size_t ShareDiffMemory(Net<Dtype>* net) {
  for (const auto& layer : net->layers()) {
    // oneDNN's Eltwise lends a gradient to a layer that reads it outside this plan, and its
    // layers keep blocked layouts in their buffers, which a view refuses; its Split (the
    // net's) only sums its tops' diffs.
    if (layer->engine() == "ONEDNN" && std::string(layer->type()) != "Split") {
      LOG(INFO) << "Net '" << net->name() << "': activation gradients keep their own memory ("
                << layer->Describe() << " runs on oneDNN)";
      return 0;
    }
  }
  // Backward runs the layers last to first: step t is layer L - 1 - t. A layer that needs
  // backward reads its tops' diffs and writes those of the bottoms it propagates to; a
  // buffer (the blobs that alias one diff memory: in place, Flatten, Reshape) is alive from
  // its first use in that order to its last.
  const int L = static_cast<int>(net->layers().size());
  std::map<const SyncedMemory*, int> index;
  std::vector<std::vector<Blob<Dtype>*>> groups;
  std::vector<Interval> intervals;
  std::vector<bool> first_is_write;
  const auto touch = [&](int blob_id, int step, bool write) {
    Blob<Dtype>* blob = net->blobs()[blob_id].get();
    auto found = index.emplace(blob->diff().get(), static_cast<int>(groups.size()));
    if (found.second) {
      groups.emplace_back();
      intervals.push_back({0, step, step, false});
      first_is_write.push_back(write);
    }
    const int b = found.first->second;
    if (std::find(groups[b].begin(), groups[b].end(), blob) == groups[b].end()) {
      groups[b].push_back(blob);
    }
    intervals[b].bytes = std::max(intervals[b].bytes, blob->count() * sizeof(Dtype));
    intervals[b].last = step;
  };
  for (int t = 0; t < L; ++t) {
    const int i = L - 1 - t;
    if (!net->layer_need_backward()[i]) continue;
    // Reads first: an in-place layer reads the diff it then writes.
    for (int blob_id : net->top_id_vecs()[i]) touch(blob_id, t, false);
    const auto& bottoms = net->bottom_id_vecs()[i];
    for (std::size_t k = 0; k < bottoms.size(); ++k) {
      if (net->bottom_need_backward()[i][k]) touch(bottoms[k], t, true);
    }
  }
  // Apart stay: a diff read before any layer writes it (it holds what it held: a loss
  // weight, or zeros), the net's outputs, and the tops of layers without bottoms (its inputs,
  // whose gradient a user may read).
  std::vector<bool> apart(net->blobs().size(), false);
  for (int blob_id : net->output_blob_indices()) apart[blob_id] = true;
  for (int i = 0; i < L; ++i) {
    if (!net->bottom_id_vecs()[i].empty()) continue;
    for (int blob_id : net->top_id_vecs()[i]) apart[blob_id] = true;
  }
  std::map<const Blob<Dtype>*, int> id_of;
  for (std::size_t id = 0; id < net->blobs().size(); ++id) {
    id_of[net->blobs()[id].get()] = static_cast<int>(id);
  }
  for (std::size_t b = 0; b < groups.size(); ++b) {
    intervals[b].kept = !first_is_write[b] || intervals[b].bytes == 0;
    for (Blob<Dtype>* blob : groups[b]) intervals[b].kept |= apart[id_of[blob]];
  }
  const SlotPlan plan = PlanSlots(intervals);
  return ApplyPlan(*net, "activation gradients", plan, groups, &Blob<Dtype>::SetDiffMemory);
}

template std::size_t ShareActivationMemory(Net<float>*, const std::vector<std::string>&);
template std::size_t ShareActivationMemory(Net<double>*, const std::vector<std::string>&);
template std::size_t ShareDiffMemory(Net<float>*);
template std::size_t ShareDiffMemory(Net<double>*);

}  // namespace doppio
