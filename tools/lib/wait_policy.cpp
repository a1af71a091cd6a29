#include "wait_policy.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace doppio {

WaitPolicyChoice ChooseWaitPolicy(int others, int ranks) {
  if (ranks > 1) {
    return {"PASSIVE", "one of " + std::to_string(ranks) + " ranks, which may share cores"};
  }
  if (others < 0) return {"PASSIVE", "the machine's load could not be read"};
  if (others == 0) return {"ACTIVE", "no other task was running when the command started"};
  return {"PASSIVE", std::to_string(others) + " other task" + (others > 1 ? "s were" : " was") +
                         " running when the command started"};
}

int ProcsRunning(const std::string& proc_stat) {
  std::istringstream lines(proc_stat);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string name;
    int running = -1;
    if (fields >> name && name == "procs_running" && fields >> running) return running;
  }
  return -1;
}

namespace {
std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// This process's threads that are running or runnable: OpenBLAS's workers, started when the
// library loads, spin for a moment, and are no other task.
int OwnRunningThreads() {
  int running = 0;
  std::error_code error;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", error)) {
    const std::string stat = ReadFile(task.path().string() + "/stat");
    // "tid (comm) S ...": the state follows the last ')', as comm may hold one.
    const std::size_t close = stat.rfind(')');
    if (close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'R') ++running;
  }
  return running;
}
}  // namespace

int JobRanks() {
  for (const char* name :
       {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE", "SLURM_NTASKS"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && std::atoi(value) > 0) return std::atoi(value);
  }
  return 1;
}

int OtherRunnableTasks() {
  int fewest = -1;
  for (int sample = 0; sample < 3; ++sample) {
    if (sample > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const int running = ProcsRunning(ReadFile("/proc/stat"));
    if (running < 0) return -1;
    const int others = running - std::max(1, OwnRunningThreads());
    fewest = fewest < 0 ? others : std::min(fewest, others);
  }
  return std::max(0, fewest);
}

}  // namespace doppio
