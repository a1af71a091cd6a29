#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "doppio/device/gpu_context.hpp"
#include "doppio/parallel/communicator.hpp"
#include "thread_budget.hpp"

namespace doppio::python {

// What pycaffe keeps per process and applies to every Net and Solver made afterwards: the mode
// (set_mode_cpu / set_mode_gpu), the device (set_device), the random seed (set_random_seed),
// and the ranks of an MPI job. Caffe keeps them in a global singleton of libcaffe; here they
// belong to the extension, and libdoppio takes them as arguments.
class Runtime {
 public:
  static Runtime& Get();

  // The CPU threads, as every doppio command has them (tools/lib/thread_budget.hpp): made on
  // the thread that imports the package, which runs its nets (a net run from another thread
  // runs on that thread alone). Nothing when the importing thread has a pool already.
  void StartThreads();

  void set_gpu_mode(bool gpu) { gpu_mode_ = gpu; }
  bool gpu_mode() const { return gpu_mode_; }
  void set_device(int device);
  int device() const { return device_; }
  // The context nets and solvers are built on: null in CPU mode, else the device's (opened
  // once, then shared). Error naming the device when it cannot be opened.
  std::shared_ptr<GpuContext> gpu();

  void set_seed(std::uint64_t seed) { seed_ = seed; }
  // The seed of the next net: set_random_seed's, else Caffe's default.
  std::uint64_t net_seed() const { return seed_.value_or(1701); }
  const std::optional<std::uint64_t>& seed() const { return seed_; }

  // The job's communicator: MPI's when the process was started by an MPI launcher (or with
  // DOPPIO_MPI=1), else one rank's. Made on first use and kept until the interpreter exits,
  // when MPI is finalised.
  std::shared_ptr<Communicator> communicator();
  void Shutdown();

 private:
  Runtime() = default;
  bool gpu_mode_ = false;
  int device_ = 0;
  std::shared_ptr<GpuContext> gpu_;
  std::optional<std::uint64_t> seed_;
  std::shared_ptr<Communicator> comm_;
  std::unique_ptr<ThreadBudget> threads_;
};

}  // namespace doppio::python
