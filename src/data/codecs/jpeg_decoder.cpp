#include "jpeg_decoder.hpp"

// jpeglib.h needs FILE and size_t declared before it.
#include <csetjmp>
#include <cstdio>
#include <cstring>

#include <jerror.h>
#include <jpeglib.h>

#include <algorithm>
#include <vector>

namespace doppio::codecs {

namespace {

// libjpeg reports errors through error_exit, which must not return; its default ends the
// process. Ours records the message and jumps back to the Guarded call that was running.
// Warnings are ignored as OpenCV ignores them, but for a premature end of the data: OpenCV
// pads such an image with grey, which the data layer must not train on.
struct ErrorManager {
  jpeg_error_mgr manager;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void ErrorExit(j_common_ptr info) {
  auto* errors = reinterpret_cast<ErrorManager*>(info->err);
  errors->manager.format_message(info, errors->message);
  std::longjmp(errors->jump, 1);
}

void EmitMessage(j_common_ptr info, int level) {
  if (level < 0 && info->err->msg_code == JWRN_JPEG_EOF) ErrorExit(info);
}

void OutputMessage(j_common_ptr) {}

// A decompressor reading from memory, destroyed (which also aborts a decode stopped early)
// when it goes out of scope.
class Decompressor {
 public:
  Decompressor(const unsigned char* data, std::size_t size) {
    info_.err = jpeg_std_error(&errors_.manager);
    errors_.manager.error_exit = ErrorExit;
    errors_.manager.emit_message = EmitMessage;
    errors_.manager.output_message = OutputMessage;
    errors_.message[0] = '\0';
    jpeg_create_decompress(&info_);
    jpeg_mem_src(&info_, data, static_cast<unsigned long>(size));
  }
  ~Decompressor() { jpeg_destroy_decompress(&info_); }
  Decompressor(const Decompressor&) = delete;
  Decompressor& operator=(const Decompressor&) = delete;

  jpeg_decompress_struct* info() { return &info_; }

  // Runs `step` (libjpeg calls, with no locals that need destroying: an error longjmps out of
  // it); false, with libjpeg's message in *error, when libjpeg failed.
  template <typename Step>
  bool Guarded(Step&& step, std::string* error) {
    if (setjmp(errors_.jump) != 0) {
      *error = errors_.message;
      return false;
    }
    step();
    return true;
  }

 private:
  jpeg_decompress_struct info_{};
  ErrorManager errors_{};
};

// Whether an APP1 marker is an Exif block whose orientation is other than 1 (upright), or
// one that does not read: OpenCV turns the image by such an orientation, so only an Exif
// block read to the end of its first directory keeps a JPEG on this decoder.
bool Oriented(const jpeg_saved_marker_ptr marker) {
  const JOCTET* data = marker->data;
  const std::size_t size = marker->data_length;
  if (size < 6 || std::memcmp(data, "Exif\0\0", 6) != 0) return false;
  const JOCTET* tiff = data + 6;
  const std::size_t length = size - 6;
  if (length < 8) return true;
  const bool little = tiff[0] == 'I' && tiff[1] == 'I';
  if (!little && !(tiff[0] == 'M' && tiff[1] == 'M')) return true;
  auto read16 = [&](std::size_t at) {
    return little ? tiff[at] | (tiff[at + 1] << 8) : (tiff[at] << 8) | tiff[at + 1];
  };
  auto read32 = [&](std::size_t at) {
    return static_cast<std::size_t>(little ? read16(at) | (read16(at + 2) << 16)
                                           : (read16(at) << 16) | read16(at + 2));
  };
  const std::size_t directory = read32(4);
  if (directory > length - 2) return true;
  const std::size_t entries = static_cast<std::size_t>(read16(directory));
  if (entries > (length - directory - 2) / 12) return true;
  for (std::size_t e = 0; e < entries; ++e) {
    const std::size_t entry = directory + 2 + 12 * e;
    // Tag 0x0112, orientation: one SHORT (type 3), held in the entry itself.
    if (read16(entry) == 0x0112) {
      return read16(entry + 2) != 3 || read32(entry + 4) != 1 || read16(entry + 8) != 1;
    }
  }
  return false;
}

}  // namespace

bool ReadJpegHeader(const unsigned char* data, std::size_t size, JpegHeader* header,
                    std::string* error) {
  if (size < 3 || data[0] != 0xFF || data[1] != 0xD8 || data[2] != 0xFF) {
    *error = "not a JPEG (no start-of-image marker)";
    return false;
  }
  Decompressor decompressor(data, size);
  jpeg_decompress_struct* info = decompressor.info();
  if (!decompressor.Guarded(
          [&] {
            jpeg_save_markers(info, JPEG_APP0 + 1, 0xFFFF);
            jpeg_read_header(info, TRUE);
          },
          error)) {
    return false;
  }
  header->width = static_cast<int>(info->image_width);
  header->height = static_cast<int>(info->image_height);
  header->components = info->num_components;
  header->oriented = false;
  for (jpeg_saved_marker_ptr marker = info->marker_list; marker != nullptr; marker = marker->next) {
    header->oriented = header->oriented || Oriented(marker);
  }
  return true;
}

bool DecodeJpeg(const unsigned char* data, std::size_t size, const JpegRequest& request,
                cv::Mat* image, std::string* error) {
  Decompressor decompressor(data, size);
  jpeg_decompress_struct* info = decompressor.info();
  if (!decompressor.Guarded([&] { jpeg_read_header(info, TRUE); }, error)) return false;
  if (info->num_components != 1 && info->num_components != 3) {
    *error = std::to_string(info->num_components) + "-component JPEG (CMYK?) is not decoded here";
    return false;
  }
  info->scale_num = static_cast<unsigned>(request.scale_eighths);
  info->scale_denom = 8;
  info->out_color_space = request.channels == 1 ? JCS_GRAYSCALE : JCS_EXT_BGR;
  if (!decompressor.Guarded([&] { jpeg_start_decompress(info); }, error)) return false;
  const cv::Rect rect = request.rect;
  const int full_width = static_cast<int>(info->output_width);
  const int full_height = static_cast<int>(info->output_height);
  if (rect.x < 0 || rect.y < 0 || rect.width <= 0 || rect.height <= 0 ||
      rect.x + rect.width > full_width || rect.y + rect.height > full_height) {
    *error = "rectangle outside the " + std::to_string(full_width) + "x" +
             std::to_string(full_height) + " image";
    return false;
  }
  // Fancy upsampling reads the chroma samples beside each pixel's, which a cropped decode
  // treats as the image's edge: one iMCU column either side (16 pixels for 4:2:0 at full
  // size) keeps the rect's own pixels those of a full decode.
  const int margin = info->max_h_samp_factor * info->min_DCT_scaled_size;
  JDIMENSION left = static_cast<JDIMENSION>(std::max(0, rect.x - margin));
  JDIMENSION width =
      static_cast<JDIMENSION>(std::min(full_width, rect.x + rect.width + margin)) - left;
  if (static_cast<int>(width) < full_width &&
      !decompressor.Guarded([&] { jpeg_crop_scanline(info, &left, &width); }, error)) {
    return false;
  }
  const int channels = request.channels == 1 ? 1 : 3;
  const int rows = rect.height;
  cv::Mat decoded(rows, static_cast<int>(width), CV_8UC(channels));
  std::vector<JSAMPROW> row_pointers(static_cast<std::size_t>(rows));
  for (int r = 0; r < rows; ++r) row_pointers[r] = decoded.ptr<JSAMPLE>(r);
  JSAMPROW* pointers = row_pointers.data();
  const bool decoded_ok = decompressor.Guarded(
      [&] {
        if (rect.y > 0) jpeg_skip_scanlines(info, static_cast<JDIMENSION>(rect.y));
        JDIMENSION done = 0;
        while (done < static_cast<JDIMENSION>(rows)) {
          done += jpeg_read_scanlines(info, pointers + done, static_cast<JDIMENSION>(rows) - done);
        }
      },
      error);
  if (!decoded_ok) return false;
  *image = decoded(cv::Rect(rect.x - static_cast<int>(left), 0, rect.width, rows));
  return true;
}

}  // namespace doppio::codecs
