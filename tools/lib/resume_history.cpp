#include "resume_history.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "doppio/util/error.hpp"

namespace doppio {

ResumeHistory::ResumeHistory(const std::string& snapshot_prefix)
    : path_(snapshot_prefix + "_resumes.txt") {}

int ResumeHistory::Record(int iter, const std::string& who) {
  std::vector<int> starts;
  {
    std::ifstream in(path_);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      int start = 0;
      // A line cut short by a killed job, or an edited one, is not a start.
      if (fields >> start) starts.push_back(start);
    }
  }
  std::ofstream out(path_, std::ios::app);
  out << iter << " " << who << "\n";
  out.flush();
  DOPPIO_ENSURE(out.good()) << path_ << ": cannot append to the resume history ("
                            << std::strerror(errno) << ")";
  int in_a_row = 1;
  for (auto it = starts.rbegin(); it != starts.rend() && *it == iter; ++it) ++in_a_row;
  return in_a_row;
}

}  // namespace doppio
