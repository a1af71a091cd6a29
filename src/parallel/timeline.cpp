#include "doppio/parallel/timeline.hpp"

#include <glog/logging.h>

#include <cstdio>
#include <cstring>

#include "doppio/core/common.hpp"
#include "doppio/util/io.hpp"

namespace doppio {

namespace {

template <typename T>
void Put(std::string* out, const T& value) {
  out->append(reinterpret_cast<const char*>(&value), sizeof(T));
}

template <typename T>
T Get(const std::string& in, std::size_t* at) {
  CHECK_LE(*at + sizeof(T), in.size()) << "truncated timeline record";
  T value;
  std::memcpy(&value, in.data() + *at, sizeof(T));
  *at += sizeof(T);
  return value;
}

void AppendEscaped(const std::string& text, std::string* out) {
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char code[8];
      std::snprintf(code, sizeof(code), "\\u%04x", c);
      out->append(code);
    } else {
      out->push_back(c);
    }
  }
}

}  // namespace

Timeline::Timeline(double origin, std::size_t max_events)
    : origin_(origin), max_events_(max_events) {}

std::uint32_t Timeline::Intern(const std::string& text) {
  auto found = string_ids_.find(text);
  if (found != string_ids_.end()) return found->second;
  const auto id = static_cast<std::uint32_t>(strings_.size());
  strings_.push_back(text);
  string_ids_.emplace(text, id);
  return id;
}

void Timeline::Span(const std::string& name, const char* category, Thread thread, double start,
                    double end, std::uint64_t bytes) {
  if (full()) {
    if (!warned_full_) {
      LOG(WARNING) << "the timeline holds " << max_events_
                   << " events; later ones are not recorded";
      warned_full_ = true;
    }
    return;
  }
  events_.push_back({Intern(name), Intern(category), static_cast<std::uint32_t>(thread),
                     start - origin_, std::max(0.0, end - start), bytes});
}

std::string Timeline::Serialize() const {
  std::string out;
  Put<std::uint64_t>(&out, strings_.size());
  for (const std::string& text : strings_) {
    Put<std::uint64_t>(&out, text.size());
    out += text;
  }
  Put<std::uint64_t>(&out, events_.size());
  for (const Event& event : events_) {
    Put(&out, event.name);
    Put(&out, event.category);
    Put(&out, event.thread);
    Put(&out, event.start);
    Put(&out, event.duration);
    Put(&out, event.bytes);
  }
  return out;
}

void Timeline::AppendJson(const std::string& serialized, int rank, std::string* json,
                          std::size_t* count) {
  std::size_t at = 0;
  const auto num_strings = Get<std::uint64_t>(serialized, &at);
  std::vector<std::string> strings(num_strings);
  for (auto& text : strings) {
    const auto length = Get<std::uint64_t>(serialized, &at);
    CHECK_LE(at + length, serialized.size()) << "truncated timeline record";
    text = serialized.substr(at, length);
    at += length;
  }
  char line[256];
  std::snprintf(line, sizeof(line),
                "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"rank "
                "%d\"}},\n{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%d,\"args\":{"
                "\"sort_index\":%d}},\n",
                rank, rank, rank, rank);
  json->append(line);
  const char* thread_names[] = {"compute", "communication"};
  for (int thread = 0; thread < 2; ++thread) {
    std::snprintf(line, sizeof(line),
                  "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{"
                  "\"name\":\"%s\"}},\n",
                  rank, thread, thread_names[thread]);
    json->append(line);
  }
  const auto num_events = Get<std::uint64_t>(serialized, &at);
  for (std::uint64_t i = 0; i < num_events; ++i) {
    const auto name = Get<std::uint32_t>(serialized, &at);
    const auto category = Get<std::uint32_t>(serialized, &at);
    const auto thread = Get<std::uint32_t>(serialized, &at);
    const auto start = Get<double>(serialized, &at);
    const auto duration = Get<double>(serialized, &at);
    const auto bytes = Get<std::uint64_t>(serialized, &at);
    CHECK(name < strings.size() && category < strings.size()) << "bad timeline record";
    json->append("{\"name\":\"");
    AppendEscaped(strings[name], json);
    json->append("\",\"cat\":\"");
    AppendEscaped(strings[category], json);
    std::snprintf(line, sizeof(line),
                  "\",\"ph\":\"X\",\"pid\":%d,\"tid\":%u,\"ts\":%.3f,\"dur\":%.3f", rank, thread,
                  start * 1e6, duration * 1e6);
    json->append(line);
    if (bytes > 0) {
      std::snprintf(line, sizeof(line), ",\"args\":{\"bytes\":%llu}",
                    static_cast<unsigned long long>(bytes));
      json->append(line);
    }
    json->append("},\n");
    ++*count;
  }
}

std::size_t Timeline::Write(Communicator* comm, const std::string& path) const {
  const std::vector<std::string> parts = comm->GatherBytes(Serialize(), 0, "timeline gather");
  if (comm->rank() != 0) return 0;
  std::string json = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  std::size_t count = 0;
  for (std::size_t rank = 0; rank < parts.size(); ++rank) {
    AppendJson(parts[rank], static_cast<int>(rank), &json, &count);
  }
  // A last metadata event, so that every real event can end in a comma.
  json += "{\"name\":\"doppio\",\"ph\":\"M\",\"pid\":0,\"args\":{\"ranks\":" +
          std::to_string(parts.size()) + "}}\n]}\n";
  WriteFileAtomically(json, path);
  return count;
}

}  // namespace doppio
