#include "doppio/parallel/rank_logging.hpp"

#include <glog/logging.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>

namespace doppio {

namespace {

int g_rank = 0;

// Writes each line with the rank in its prefix, in one write() so that the lines of
// concurrent threads do not interleave.
class RankLogSink : public google::LogSink {
 public:
  void send(google::LogSeverity severity, const char*, const char* base_filename, int line,
            const google::LogMessageTime& time, const char* message,
            std::size_t message_len) override {
    // glog's own prefix, with the rank where glog puts the thread id.
    char year[12] = "";
    if (FLAGS_log_year_in_prefix) std::snprintf(year, sizeof(year), "%04d", time.year() + 1900);
    char prefix[160];
    const int length = std::snprintf(
        prefix, sizeof(prefix), "%c%s%02d%02d %02d:%02d:%02d.%06d rank %d %s:%d] ",
        "IWEF"[std::clamp<int>(severity, 0, 3)], year, time.month() + 1, time.day(), time.hour(),
        time.min(), time.sec(), static_cast<int>(time.usec()), g_rank, base_filename, line);
    std::string text(prefix, std::max(0, std::min<int>(length, sizeof(prefix) - 1)));
    text.append(message, message_len);
    text.push_back('\n');
    std::size_t written = 0;
    while (written < text.size()) {
      const ssize_t result = ::write(2, text.data() + written, text.size() - written);
      if (result <= 0) break;
      written += static_cast<std::size_t>(result);
    }
  }
};

// glog's crash report (stack trace of a fatal signal or CHECK), line by line with the rank.
void WriteFailure(const char* data, std::size_t size) {
  static bool at_line_start = true;
  std::string text;
  for (std::size_t i = 0; i < size; ++i) {
    if (at_line_start) text += "rank " + std::to_string(g_rank) + ": ";
    text.push_back(data[i]);
    at_line_start = data[i] == '\n';
  }
  if (::write(2, text.data(), text.size()) < 0) return;
}

}  // namespace

void SetUpRankLogging(int rank, int size) {
  if (size <= 1) return;
  g_rank = rank;
  google::InstallFailureWriter(&WriteFailure);
  if (rank == 0) return;
  static RankLogSink sink;
  FLAGS_minloglevel = std::max(FLAGS_minloglevel, static_cast<int>(google::GLOG_WARNING));
  // The sink writes to stderr; glog itself writes nothing there, nor log files.
  FLAGS_logtostderr = false;
  FLAGS_alsologtostderr = false;
  FLAGS_stderrthreshold = google::NUM_SEVERITIES;
  for (int severity = 0; severity < google::NUM_SEVERITIES; ++severity) {
    google::SetLogDestination(severity, "");
  }
  google::AddLogSink(&sink);
}

}  // namespace doppio
