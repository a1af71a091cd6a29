#include "doppio/core/activation_sharing.hpp"

#include <glog/logging.h>

#include <algorithm>
#include <map>
#include <memory>

#include "doppio/util/memory_usage.hpp"

namespace doppio {

namespace {

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

  // Greedy, in the order the buffers are written: each takes the pool slot that fits it best
  // among those whose last occupant's reader has run; a slot grows to its largest occupant.
  std::vector<Buffer<Dtype>> buffers = CollectBuffers(*net, kept);
  struct Slot {
    std::size_t bytes = 0;
    int free_after = -1;  // the last reader of its latest occupant
  };
  std::vector<Slot> slots;
  std::vector<int> slot_of(buffers.size(), -1);
  std::size_t unshared = 0;
  for (std::size_t b = 0; b < buffers.size(); ++b) {
    const Buffer<Dtype>& buffer = buffers[b];
    if (buffer.kept || buffer.bytes == 0) continue;
    unshared += buffer.bytes;
    int best = -1;
    for (std::size_t s = 0; s < slots.size(); ++s) {
      if (slots[s].free_after >= buffer.first_writer) continue;
      // Prefer the smallest slot that fits, else the largest (it grows least).
      const bool fits = slots[s].bytes >= buffer.bytes;
      if (best < 0) {
        best = static_cast<int>(s);
        continue;
      }
      const bool best_fits = slots[best].bytes >= buffer.bytes;
      if ((fits && (!best_fits || slots[s].bytes < slots[best].bytes)) ||
          (!fits && !best_fits && slots[s].bytes > slots[best].bytes)) {
        best = static_cast<int>(s);
      }
    }
    if (best < 0) {
      best = static_cast<int>(slots.size());
      slots.emplace_back();
    }
    slots[best].bytes = std::max(slots[best].bytes, buffer.bytes);
    slots[best].free_after = buffer.last_reader;
    slot_of[b] = best;
  }

  std::vector<std::shared_ptr<SyncedMemory>> memory;
  std::size_t shared = 0;
  for (const Slot& slot : slots) {
    memory.push_back(std::make_shared<SyncedMemory>(slot.bytes));
    shared += slot.bytes;
  }
  for (std::size_t b = 0; b < buffers.size(); ++b) {
    if (slot_of[b] < 0) continue;
    for (Blob<Dtype>* blob : buffers[b].blobs) {
      blob->SetDataMemory(
          std::make_shared<SyncedMemory>(memory[slot_of[b]], 0, blob->count() * sizeof(Dtype)));
    }
  }
  const std::size_t saved = unshared - shared;
  LOG(INFO) << "Net '" << net->name() << "' (" << Phase_Name(net->phase())
            << "): activations that are not alive at once share memory: "
            << FormatMebibytes(unshared) << " in " << slots.size() << " buffers of "
            << FormatMebibytes(shared) << ", saving " << FormatMebibytes(saved);
  return saved;
}

template std::size_t ShareActivationMemory(Net<float>*, const std::vector<std::string>&);
template std::size_t ShareActivationMemory(Net<double>*, const std::vector<std::string>&);

}  // namespace doppio
