#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "doppio/parallel/communicator.hpp"

namespace doppio {

// Records what one rank does (spans on the steady clock) and writes the whole job's record
// as a Chrome trace (JSON, for chrome://tracing and ui.perfetto.dev): one process per rank,
// a "compute" thread (per-layer forward and backward, waits, update, test) and a
// "communication" thread (each collective from the moment it started to its completion).
class Timeline {
 public:
  enum Thread { kCompute = 0, kCommunication = 1 };

  // Times are CommClockSeconds(); `origin` is the job's common zero (taken after a barrier).
  explicit Timeline(double origin, std::size_t max_events = 4000000);

  void Span(const std::string& name, const char* category, Thread thread, double start, double end,
            std::uint64_t bytes = 0);
  // Moves the common zero (spans recorded so far keep theirs).
  void set_origin(double origin) { origin_ = origin; }
  std::size_t num_events() const { return events_.size(); }
  bool full() const { return events_.size() >= max_events_; }

  // Collective: every rank sends its events to rank 0, which writes `path` (atomically).
  // Returns the number of events written (0 on the other ranks).
  std::size_t Write(Communicator* comm, const std::string& path) const;

  // This rank's events in the compact binary form Write gathers, and their conversion to
  // trace events (JSON objects, one per line, each line ending in a comma).
  std::string Serialize() const;
  static void AppendJson(const std::string& serialized, int rank, std::string* json,
                         std::size_t* count);

 private:
  struct Event {
    std::uint32_t name;
    std::uint32_t category;
    std::uint32_t thread;
    double start;
    double duration;
    std::uint64_t bytes;
  };
  std::uint32_t Intern(const std::string& text);

  double origin_;
  std::size_t max_events_;
  std::vector<Event> events_;
  std::vector<std::string> strings_;
  std::unordered_map<std::string, std::uint32_t> string_ids_;
  mutable bool warned_full_ = false;
};

}  // namespace doppio
