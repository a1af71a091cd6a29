#pragma once

#include <memory>

#include "doppio/device/gpu_context.hpp"

namespace doppio {

// Times the work queued on a GPU's compute stream by CUDA events. A host clock read around
// Forward or Backward, or around the issue of a collective, measures when the work was
// queued: launches return at once. Mark records an event where the stream's queue ends
// now; Resolve, called once per iteration after the host has waited for the device anyway,
// waits for the last mark and reads every mark's time, so there is no synchronisation per
// mark.
//
// Times are seconds on the host's clock (CommClockSeconds): the first mark's host time plus
// the device time elapsed since it. Lengths and gaps are the device's; the first mark is
// placed where the host made it, which is early by whatever work was still queued then.
class DeviceTimer {
 public:
  virtual ~DeviceTimer() = default;
  // Forgets the marks and makes mark 0 at the end of the queue, placed at host time `now`.
  virtual void Start(double now) = 0;
  // Returns the new mark's number.
  virtual int Mark() = 0;
  // Waits for the last mark; then time() answers for every mark made since Start.
  virtual void Resolve() = 0;
  virtual double time(int mark) const = 0;
};

// Throws Error in a build without CUDA.
std::unique_ptr<DeviceTimer> MakeDeviceTimer(std::shared_ptr<GpuContext> gpu);

}  // namespace doppio
