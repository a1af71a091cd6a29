#pragma once

// nvJPEG, for the Data layer's data_param.decode: GPU. Built with the CUDA toolkit only:
// this header defines DOPPIO_WITH_NVJPEG there, not under the emulation, which has no nvJPEG.
#ifdef DOPPIO_WITH_CUDA
#include <cuda_runtime.h>
#ifndef DOPPIO_CUDA_EMULATION
#define DOPPIO_WITH_NVJPEG 1
#endif
#endif

#ifdef DOPPIO_WITH_NVJPEG

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "doppio/device/gpu_context.hpp"

namespace doppio {

// Decodes batches of JPEGs on one GPU with nvJPEG's batched decoder: on the GPU's hardware
// JPEG decoder where it has one (A100, H100, H200), else with the CUDA backend; a batch the
// hardware decoder refuses (progressive JPEGs) is decoded again with the CUDA backend.
// libnvjpeg is opened when the first decoder is made (src/device/cuda/nvjpeg_decoder.cpp
// says why). One thread at a time.
class NvjpegDecoder {
 public:
  // Error naming the library when it cannot be loaded or the GPU refuses a handle.
  explicit NvjpegDecoder(GpuContext& gpu);
  ~NvjpegDecoder();
  NvjpegDecoder(const NvjpegDecoder&) = delete;
  NvjpegDecoder& operator=(const NvjpegDecoder&) = delete;

  // "hardware" or "CUDA", for the log.
  const char* backend() const;

  // The header of a JPEG: its components (1 or 3) and size. False, with nvJPEG's reason,
  // when nvJPEG does not read it.
  bool ReadHeader(std::string_view jpeg, int* components, int* height, int* width,
                  std::string* reason);

  // Decodes jpegs[i], of heights[i] x widths[i] pixels (ReadHeader's), to 8-bit HWC pixels
  // of `channels` (3: BGR, 1: gray) on `stream`, into buffers of the decoder's that the next
  // Decode reuses. False, with the reason, when the batch does not decode.
  bool Decode(const std::vector<std::string_view>& jpegs, const std::vector<int>& heights,
              const std::vector<int>& widths, int channels, cudaStream_t stream,
              std::string* reason);
  // Image i of the last Decode (device memory) and its row pitch in bytes.
  const std::uint8_t* pixels(int i) const { return buffer_ + offsets_[i]; }
  long long pitch(int i) const { return pitches_[i]; }

 private:
  struct Backend;  // a library handle and its batched decoder's state
  bool DecodeWith(Backend* backend, const std::vector<std::string_view>& jpegs, int channels,
                  cudaStream_t stream, std::string* reason);

  GpuContext& gpu_;
  std::vector<std::unique_ptr<Backend>> backends_;  // the first one is tried first
  std::uint8_t* buffer_ = nullptr;
  std::size_t capacity_ = 0;
  std::vector<std::size_t> offsets_;
  std::vector<long long> pitches_;
};

}  // namespace doppio

#endif  // DOPPIO_WITH_NVJPEG
