#include "doppio/device/onednn.hpp"

#ifdef DOPPIO_WITH_ONEDNN

#include <omp.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include "doppio/util/error.hpp"
#include "doppio/util/host_workspace.hpp"
#include "doppio/util/math_functions.hpp"
#include "doppio/util/thread_pool.hpp"

namespace doppio {

void ThrowOnednnError(const std::string& who, const std::string& primitive,
                      const dnnl::error& error) {
  DOPPIO_FAIL() << who << ": oneDNN " << primitive << ": " << error.what() << " (status "
                << dnnl_status2str(error.status) << ")";
}

void UseOnednnThreads() {
  const int threads = ThreadPool::Current() != nullptr ? ParallelParts() : BlasThreads();
  if (omp_get_max_threads() != threads) omp_set_num_threads(threads);
}

dnnl::memory::desc OnednnPlainDesc(const dnnl::memory::dims& dims, dnnl::memory::data_type type) {
  dnnl::memory::dims strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * dims[i + 1];
  return dnnl::memory::desc(dims, type, strides);
}

dnnl::memory::desc OnednnAnyDesc(const dnnl::memory::dims& dims, dnnl::memory::data_type type) {
  return dnnl::memory::desc(dims, type, dnnl::memory::format_tag::any);
}

std::string OnednnBf16Missing() {
  // oneDNN's ISAs are nested bit sets: each holds the bits of those below it.
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
  if ((isa & bf16) == bf16) return "";
  return "needs AVX512-BF16 (the CPU flag avx512_bf16), which this CPU lacks (oneDNN runs " +
         std::string(dnnl_cpu_isa2str(static_cast<dnnl_cpu_isa_t>(isa))) +
         " here, and DNNL_MAX_CPU_ISA may lower it)";
}

bool OnednnImplementationIs(const dnnl::primitive_desc_base& pd, const char* kind) {
  return std::string(pd.impl_info_str()).find(kind) != std::string::npos;
}

std::size_t OnednnAligned(std::size_t bytes) {
  constexpr std::size_t kAlignment = 64;
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

namespace {
thread_local std::uint64_t placements = 0;
}  // namespace

void* OnednnWorkspace(std::size_t bytes) {
  ++placements;
  return HostWorkspace(bytes);
}

std::uint64_t OnednnWorkspacePlacements() { return placements; }

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
