#include "doppio/data/image_codecs.hpp"

#include "doppio/util/library_module.hpp"

namespace doppio {

const ImageCodecs& OpenImageCodecs() {
  static const ImageCodecs* const codecs = [] {
    // DOPPIO_IMAGE_CODECS_MODULE: the module's file name, from the build.
    const LibraryModule module =
        OpenLibraryModule(DOPPIO_IMAGE_CODECS_MODULE, "the image codecs module");
    return reinterpret_cast<decltype(&DoppioImageCodecs)>(module.Symbol("DoppioImageCodecs"))();
  }();
  return *codecs;
}

}  // namespace doppio
