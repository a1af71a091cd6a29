#pragma once

#include <string>

namespace doppio {

// The starts of a job that resumes itself (`doppio train --resume=auto`), one line each in
// <snapshot_prefix>_resumes.txt: the iteration the run started from and who started it (the
// Slurm job and restart). A job that is interrupted again and again before it writes a newer
// snapshot starts from the same iteration every time: a requeue loop, which the log reports.
class ResumeHistory {
 public:
  explicit ResumeHistory(const std::string& snapshot_prefix);

  // Appends this start and returns how many starts in a row, this one included, began at
  // `iter`. Throws Error naming the file when it cannot be written.
  int Record(int iter, const std::string& who);

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace doppio
