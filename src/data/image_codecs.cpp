#include "doppio/data/image_codecs.hpp"

#include <dlfcn.h>

#include <string>

#include "doppio/util/error.hpp"

namespace doppio {

namespace {
// The module is built next to libdoppio (DOPPIO_IMAGE_CODECS_MODULE is its file name), so it
// is looked for in the folder this library was loaded from.
std::string ModulePath() {
  Dl_info info{};
  std::string folder;
  if (dladdr(reinterpret_cast<void*>(&OpenImageCodecs), &info) != 0 && info.dli_fname) {
    folder = info.dli_fname;
    const auto slash = folder.rfind('/');
    folder = slash == std::string::npos ? "" : folder.substr(0, slash + 1);
  }
  return folder + DOPPIO_IMAGE_CODECS_MODULE;
}
}  // namespace

const ImageCodecs& OpenImageCodecs() {
  static const ImageCodecs* const codecs = [] {
    const std::string path = ModulePath();
    void* module = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (module == nullptr) {
      const char* reason = dlerror();
      DOPPIO_FAIL() << "cannot open the image codecs module " << path << ": "
                    << (reason ? reason : "unknown reason");
    }
    void* table = dlsym(module, "DoppioImageCodecs");
    DOPPIO_ENSURE(table != nullptr) << path << " has no DoppioImageCodecs: not Doppio's module";
    return reinterpret_cast<decltype(&DoppioImageCodecs)>(table)();
  }();
  return *codecs;
}

}  // namespace doppio
