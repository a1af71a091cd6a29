#pragma once

#include <glog/logging.h>

#include <string>
#include <vector>

namespace doppio {

// Collects the messages glog logs at one severity while it lives, lowering the test's
// minimum log level to that severity meanwhile (below it glog drops a message before any
// sink sees it).
class LogCapture : public google::LogSink {
 public:
  explicit LogCapture(google::LogSeverity severity)
      : severity_(severity), saved_min_level_(FLAGS_minloglevel) {
    if (FLAGS_minloglevel > severity) FLAGS_minloglevel = severity;
    google::AddLogSink(this);
  }
  ~LogCapture() override {
    google::RemoveLogSink(this);
    FLAGS_minloglevel = saved_min_level_;
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  void send(google::LogSeverity severity, const char*, const char*, int,
            const google::LogMessageTime&, const char* message, size_t length) override {
    if (severity == severity_) lines.emplace_back(message, length);
  }
  // Every message, one per line.
  std::string text() const {
    std::string all;
    for (const std::string& line : lines) all += line + "\n";
    return all;
  }

  std::vector<std::string> lines;

 private:
  google::LogSeverity severity_;
  int saved_min_level_;
};

}  // namespace doppio
