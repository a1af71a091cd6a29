// convert_imageset: a list of images with labels -> LMDB of Datum records.
#include <cstdio>

#include "doppio/data/convert.hpp"
#include "tool_main.hpp"

DEFINE_bool(gray, false, "Store the images as 1-channel gray");
DEFINE_bool(shuffle, false, "Shuffle the order of the images (seeded by --seed)");
DEFINE_uint64(seed, 1701, "Seed of --shuffle");
DEFINE_string(backend, "lmdb", "The output database backend (lmdb; leveldb is not supported)");
DEFINE_int32(resize_width, 0, "Resize images to this width (with --resize_height)");
DEFINE_int32(resize_height, 0, "Resize images to this height (with --resize_width)");
DEFINE_bool(check_size, false, "Check that every image has the same size");
DEFINE_bool(encoded, false, "Store the images encoded (JPEG/PNG bytes) instead of raw pixels");
DEFINE_string(encode_type, "",
              "With --encoded: the format to store (jpg, png, ...); empty keeps each file's own");

int main(int argc, char** argv) {
  return doppio::RunTool(
      argc, argv,
      "Converts a set of images to an LMDB of Datum records.\n"
      "Usage:\n"
      "    convert_imageset [FLAGS] ROOTFOLDER/ LISTFILE DB_NAME\n"
      "LISTFILE holds one 'subfolder/file.jpg label' per line; ROOTFOLDER is prefixed to "
      "each path.",
      3, [](int argc, char** argv) {
        doppio::ImageSetOptions options;
        options.gray = FLAGS_gray;
        options.shuffle = FLAGS_shuffle;
        options.seed = FLAGS_seed;
        options.backend = FLAGS_backend;
        options.resize_width = FLAGS_resize_width;
        options.resize_height = FLAGS_resize_height;
        options.check_size = FLAGS_check_size;
        options.encoded = FLAGS_encoded;
        options.encode_type = FLAGS_encode_type;
        const doppio::ConvertSummary summary =
            doppio::ConvertImageSet(argv[1], argv[2], argv[3], options);
        std::printf("convert_imageset: wrote %zu records to %s in %.2f s\n", summary.records,
                    argv[3], summary.seconds);
        return 0;
      });
}
