#include "doppio/util/host_workspace.hpp"

#include <cstdlib>
#include <memory>

#include "doppio/util/error.hpp"

namespace doppio {

namespace {
// The SIMD kernels read whole cache lines.
constexpr std::size_t kAlignment = 64;

struct Workspace {
  std::unique_ptr<void, decltype(&std::free)> block{nullptr, &std::free};
  std::size_t bytes = 0;
};

thread_local Workspace workspace;
}  // namespace

void* HostWorkspace(std::size_t bytes) {
  if (bytes <= workspace.bytes && workspace.block) return workspace.block.get();
  // The old contents are not kept: freeing first keeps the peak at the new size.
  workspace.block.reset();
  workspace.bytes = 0;
  const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  workspace.block.reset(std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded));
  DOPPIO_ENSURE(workspace.block != nullptr)
      << "cannot allocate " << bytes
      << " bytes of host scratch for a layer (is the net or its batch too large for this "
         "machine?)";
  workspace.bytes = rounded;
  return workspace.block.get();
}

std::size_t HostWorkspaceBytes() { return workspace.bytes; }

}  // namespace doppio
