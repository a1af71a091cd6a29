#include "doppio/util/library_module.hpp"

#include <dlfcn.h>

#include "doppio/util/error.hpp"

namespace doppio {

namespace {
// The folder of the library this function is linked into, with a trailing slash.
std::string LibraryFolder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&LibraryFolder), &info) == 0 || info.dli_fname == nullptr) {
    return "";
  }
  const std::string file = info.dli_fname;
  const auto slash = file.rfind('/');
  return slash == std::string::npos ? "" : file.substr(0, slash + 1);
}
}  // namespace

void* LibraryModule::Symbol(const char* symbol) const {
  void* address = dlsym(handle, symbol);
  DOPPIO_ENSURE(address != nullptr) << path << " has no " << symbol << ": not Doppio's module";
  return address;
}

LibraryModule OpenLibraryModule(const std::string& file_name, const std::string& what,
                                bool global) {
  LibraryModule module;
  module.path = LibraryFolder() + file_name;
  module.handle = dlopen(module.path.c_str(), RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL));
  if (module.handle == nullptr) {
    const char* reason = dlerror();
    DOPPIO_FAIL() << "cannot open " << what << " " << module.path << ": "
                  << (reason ? reason : "unknown reason");
  }
  return module;
}

}  // namespace doppio
