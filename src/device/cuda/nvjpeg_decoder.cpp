// nvJPEG, opened on first use (real CUDA builds only, as cuBLAS: cublas_loader.cpp).
//
// Why not linked: the CUDA toolkit Doppio is built with need not ship nvJPEG (a toolkit
// without the nvjpeg component has neither the library nor nvjpeg.h), and only a Data layer
// with data_param.decode: GPU needs it. So the few entry points used are declared here as
// nvjpeg.h declares them (its C ABI, stable across CUDA 11-13) and looked up in
// libnvjpeg.so.<CUDA major> when the first decoder is made; a machine without it gets an
// error naming the library and the field.
#include "doppio/device/nvjpeg_decoder.hpp"

#include <dlfcn.h>

#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "doppio/device/gpu_util.hpp"
#include "doppio/util/error.hpp"

namespace doppio {
namespace {

// nvjpeg.h's types, those used here.
using Status = int;  // nvjpegStatus_t: 0 is NVJPEG_STATUS_SUCCESS
constexpr Status kSuccess = 0;
using Handle = struct NvjpegHandleOpaque*;                             // nvjpegHandle_t
using State = struct NvjpegStateOpaque*;                               // nvjpegJpegState_t
enum BackendKind : int { kBackendDefault = 0, kBackendHardware = 3 };  // nvjpegBackend_t
enum OutputFormat : int { kOutputY = 2, kOutputBgrInterleaved = 6 };   // nvjpegOutputFormat_t
constexpr int kMaxComponents = 4;                                      // NVJPEG_MAX_COMPONENT
struct Image {                                                         // nvjpegImage_t
  unsigned char* channel[kMaxComponents];
  std::size_t pitch[kMaxComponents];
};

struct Api {
  Status (*CreateEx)(int backend, void* device_allocator, void* pinned_allocator, unsigned flags,
                     Handle* handle);
  Status (*Destroy)(Handle handle);
  Status (*JpegStateCreate)(Handle handle, State* state);
  Status (*JpegStateDestroy)(State state);
  Status (*GetImageInfo)(Handle handle, const unsigned char* data, std::size_t length,
                         int* components, int* subsampling, int* widths, int* heights);
  Status (*DecodeBatchedInitialize)(Handle handle, State state, int batch_size, int max_cpu_threads,
                                    int output_format);
  Status (*DecodeBatched)(Handle handle, State state, const unsigned char* const* data,
                          const std::size_t* lengths, Image* destinations, cudaStream_t stream);
};

const char* StatusName(Status status) {
  static const char* const names[] = {"success",
                                      "not initialized",
                                      "invalid parameter",
                                      "bad JPEG",
                                      "JPEG not supported",
                                      "allocator failure",
                                      "execution failed",
                                      "architecture mismatch",
                                      "internal error",
                                      "implementation not supported",
                                      "incomplete bitstream"};
  return status >= 0 && status < static_cast<int>(sizeof(names) / sizeof(names[0]))
             ? names[status]
             : "unknown status";
}

const Api& Library() {
  static const Api api = [] {
    const std::string name = "libnvjpeg.so." + std::to_string(CUDART_VERSION / 1000);
    void* library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      const char* reason = dlerror();
      DOPPIO_FAIL() << "cannot load nvJPEG (" << name << "), which data_param.decode: GPU needs: "
                    << (reason ? reason : "unknown reason")
                    << " (install the CUDA toolkit's nvjpeg, or decode: CPU)";
    }
    auto resolve = [&](auto* function, const char* symbol) {
      void* address = dlsym(library, symbol);
      DOPPIO_ENSURE(address != nullptr)
          << name << " has no " << symbol << ": it is not the nvJPEG of CUDA "
          << CUDART_VERSION / 1000;
      *function = reinterpret_cast<std::remove_pointer_t<decltype(function)>>(address);
    };
    Api loaded{};
    resolve(&loaded.CreateEx, "nvjpegCreateEx");
    resolve(&loaded.Destroy, "nvjpegDestroy");
    resolve(&loaded.JpegStateCreate, "nvjpegJpegStateCreate");
    resolve(&loaded.JpegStateDestroy, "nvjpegJpegStateDestroy");
    resolve(&loaded.GetImageInfo, "nvjpegGetImageInfo");
    resolve(&loaded.DecodeBatchedInitialize, "nvjpegDecodeBatchedInitialize");
    resolve(&loaded.DecodeBatched, "nvjpegDecodeBatched");
    return loaded;
  }();
  return api;
}

}  // namespace

struct NvjpegDecoder::Backend {
  const char* name = "";
  Handle handle = nullptr;
  State state = nullptr;
  // What the batched decoder was initialised for; another batch size or format initialises
  // it again, as does a failed batch.
  int batch_size = 0, format = -1;

  ~Backend() {
    if (state) Library().JpegStateDestroy(state);
    if (handle) Library().Destroy(handle);
  }
};

NvjpegDecoder::NvjpegDecoder(GpuContext& gpu) : gpu_(gpu) {
  const Api& api = Library();
  gpu_.MakeCurrent();
  for (const auto& [kind, name] :
       {std::pair{kBackendHardware, "hardware"}, std::pair{kBackendDefault, "CUDA"}}) {
    auto backend = std::make_unique<Backend>();
    backend->name = name;
    const Status created = api.CreateEx(kind, nullptr, nullptr, 0, &backend->handle);
    // A GPU without a hardware JPEG decoder refuses that backend: the CUDA one remains.
    if (created != kSuccess) {
      backend->handle = nullptr;
      DOPPIO_ENSURE(kind == kBackendHardware)
          << "nvJPEG refuses a handle on " << gpu_.Describe() << ": " << StatusName(created);
      continue;
    }
    const Status state = api.JpegStateCreate(backend->handle, &backend->state);
    DOPPIO_ENSURE(state == kSuccess)
        << "nvJPEG refuses a decoder state on " << gpu_.Describe() << ": " << StatusName(state);
    backends_.push_back(std::move(backend));
  }
}

NvjpegDecoder::~NvjpegDecoder() {
  if (buffer_) cudaFree(buffer_);
}

const char* NvjpegDecoder::backend() const { return backends_.front()->name; }

bool NvjpegDecoder::ReadHeader(std::string_view jpeg, int* components, int* height, int* width,
                               std::string* reason) {
  int subsampling = 0, widths[kMaxComponents] = {}, heights[kMaxComponents] = {};
  const Status status = Library().GetImageInfo(
      backends_.back()->handle, reinterpret_cast<const unsigned char*>(jpeg.data()), jpeg.size(),
      components, &subsampling, widths, heights);
  if (status != kSuccess) {
    *reason = std::string("nvJPEG does not read its header: ") + StatusName(status);
    return false;
  }
  *height = heights[0];
  *width = widths[0];
  return true;
}

bool NvjpegDecoder::Decode(const std::vector<std::string_view>& jpegs,
                           const std::vector<int>& heights, const std::vector<int>& widths,
                           int channels, cudaStream_t stream, std::string* reason) {
  const std::size_t n = jpegs.size();
  offsets_.assign(n, 0);
  pitches_.assign(n, 0);
  std::size_t total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    // Rows start 256-byte aligned, as the decoder's stores want.
    pitches_[i] = (static_cast<long long>(widths[i]) * channels + 255) / 256 * 256;
    offsets_[i] = total;
    total += static_cast<std::size_t>(pitches_[i]) * heights[i];
  }
  gpu_.MakeCurrent();
  if (total > capacity_) {
    // The previous batch's pixels were read before this one began (the caller waits for
    // each batch's stream).
    if (buffer_) DOPPIO_CUDA_CHECK(cudaFree(buffer_));
    buffer_ = nullptr;
    capacity_ = 0;
    DOPPIO_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&buffer_), total));
    capacity_ = total;
  }
  std::string first_reason;
  for (const auto& backend : backends_) {
    if (DecodeWith(backend.get(), jpegs, channels, stream, reason)) return true;
    if (first_reason.empty()) first_reason = *reason;
  }
  *reason = first_reason;
  return false;
}

bool NvjpegDecoder::DecodeWith(Backend* backend, const std::vector<std::string_view>& jpegs,
                               int channels, cudaStream_t stream, std::string* reason) {
  const Api& api = Library();
  const int n = static_cast<int>(jpegs.size());
  const int format = channels == 1 ? kOutputY : kOutputBgrInterleaved;
  if (backend->batch_size != n || backend->format != format) {
    const Status status =
        api.DecodeBatchedInitialize(backend->handle, backend->state, n, 1, format);
    if (status != kSuccess) {
      *reason = std::string("nvJPEG's ") + backend->name +
                " batched decoder does not start: " + StatusName(status);
      return false;
    }
    backend->batch_size = n;
    backend->format = format;
  }
  std::vector<const unsigned char*> data(n);
  std::vector<std::size_t> lengths(n);
  std::vector<Image> images(n);
  for (int i = 0; i < n; ++i) {
    data[i] = reinterpret_cast<const unsigned char*>(jpegs[i].data());
    lengths[i] = jpegs[i].size();
    images[i] = Image{};
    images[i].channel[0] = buffer_ + offsets_[i];
    images[i].pitch[0] = static_cast<std::size_t>(pitches_[i]);
  }
  const Status status = api.DecodeBatched(backend->handle, backend->state, data.data(),
                                          lengths.data(), images.data(), stream);
  if (status != kSuccess) {
    backend->batch_size = 0;  // a failed batch needs the decoder initialised again
    *reason = std::string("nvJPEG's ") + backend->name + " decoder: " + StatusName(status);
    return false;
  }
  return true;
}

}  // namespace doppio
