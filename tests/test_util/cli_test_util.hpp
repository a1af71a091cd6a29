#pragma once

// Runs the built `doppio` binary as a child process, its output captured in a file.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <thread>
#include <vector>
#include "test_util.hpp"

namespace doppio {
namespace cli_test {

inline std::string DoppioBinary() { return BinaryDir() + "/tools/doppio"; }
// The tool's test build: DOPPIO_FAIL_RANK/ITER/MODE and DOPPIO_FAULT_WRITE make it fail on
// purpose (tools/faults/); the shipped doppio ignores them.
inline std::string DoppioFaultsBinary() { return BinaryDir() + "/tools/doppio_faults"; }

inline std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// A running `doppio` with stdout and stderr going to `log`.
class Child {
 public:
  Child(const std::vector<std::string>& args, const std::string& log,
        const std::map<std::string, std::string>& env = {},
        const std::string& binary = DoppioBinary())
      : log_(log) {
    // Truncate before forking, so a reader never sees an earlier run's log as this one's.
    WriteText(log, "");
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0) _exit(126);
      dup2(fd, 1);
      dup2(fd, 2);
      // Keep glog's output on stderr only (no log files in /tmp).
      setenv("GLOG_logtostderr", "1", 1);
      for (const auto& entry : env) setenv(entry.first.c_str(), entry.second.c_str(), 1);
      std::vector<std::string> all = {binary};
      all.insert(all.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (auto& arg : all) argv.push_back(arg.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
  }
  ~Child() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  void Signal(int signal_number) const { kill(pid_, signal_number); }
  // The exit code, or -1 after a timeout (the child is then killed) or a death by signal.
  int Wait(double timeout_seconds = 120) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
    while (true) {
      int status = 0;
      const pid_t done = waitpid(pid_, &status, WNOHANG);
      if (done == pid_) {
        exited_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << "doppio did not finish in " << timeout_seconds << " s; log:\n" << Log();
        return -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  // Waits until `predicate` holds; false after the timeout or when the child has exited.
  template <typename Predicate>
  bool WaitUntil(Predicate predicate, double timeout_seconds = 60) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      if (predicate()) return true;
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return predicate();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  std::string Log() const { return ReadText(log_); }

 private:
  std::string log_;
  pid_t pid_ = -1;
  bool exited_ = false;
};

struct Result {
  int exit_code;
  std::string output;
};

// Runs `command` through the shell, stdout and stderr together.
inline Result RunShell(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {-1, ""};
  std::string output;
  char buffer[4096];
  while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) output += buffer;
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

inline Result RunDoppio(const std::vector<std::string>& args, const std::string& log,
                        const std::map<std::string, std::string>& env = {},
                        const std::string& binary = DoppioBinary()) {
  Child child(args, log, env, binary);
  const int code = child.Wait();
  return {code, child.Log()};
}

}  // namespace cli_test
}  // namespace doppio
