#pragma once

#include <string>

namespace doppio {

// A part of Doppio that would cost every process its start-up time or a large dependency
// (OpenCV's image codecs, the Python interpreter) is a module built next to libdoppio and
// opened the first time it is needed.
struct LibraryModule {
  void* handle = nullptr;
  std::string path;

  // The address of `symbol` in the module. Throws Error naming the module when it lacks it
  // (a file of that name that is not Doppio's module).
  void* Symbol(const char* symbol) const;
};

// Opens `file_name` from the folder libdoppio was loaded from. `global` makes its symbols
// visible to the libraries loaded after it (RTLD_GLOBAL). Throws Error naming `what`, the path
// and the loader's reason when it cannot be opened.
LibraryModule OpenLibraryModule(const std::string& file_name, const std::string& what,
                                bool global = false);

}  // namespace doppio
