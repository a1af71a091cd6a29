#pragma once

#include <chrono>

namespace doppio {

// Wall-clock stopwatch on the steady clock.
class Timer {
 public:
  Timer() { Start(); }
  void Start() { start_ = std::chrono::steady_clock::now(); }
  double MilliSeconds() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_)
        .count();
  }
  double Seconds() const { return MilliSeconds() / 1000.0; }

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace doppio
