#include "runtime.hpp"

#include "doppio/parallel/mpi_communicator.hpp"
#include "doppio/parallel/rank_logging.hpp"
#include "doppio/util/error.hpp"

namespace doppio::python {

Runtime& Runtime::Get() {
  static Runtime runtime;
  return runtime;
}

void Runtime::StartThreads() {
  // Inside `doppio train` (a Python layer's interpreter) the tool's budget is in place.
  if (threads_ || ThreadPool::Current() != nullptr) return;
  threads_ = std::make_unique<ThreadBudget>(0, LocalRanksFromLauncher());
}

void Runtime::set_device(int device) {
  DOPPIO_ENSURE(device >= 0) << "set_device: a device id is >= 0, not " << device;
  if (device != device_) gpu_.reset();
  device_ = device;
}

std::shared_ptr<GpuContext> Runtime::gpu() {
  if (!gpu_mode_) return nullptr;
  if (!gpu_) gpu_ = GpuContext::Create(device_);
  return gpu_;
}

std::shared_ptr<Communicator> Runtime::communicator() {
  if (!comm_) {
    comm_ = MakeJobCommunicator();
    SetUpRankLogging(comm_->rank(), comm_->size());
  }
  return comm_;
}

void Runtime::Shutdown() {
  comm_.reset();
  gpu_.reset();
  threads_.reset();
}

}  // namespace doppio::python
