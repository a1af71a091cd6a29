#pragma once

#include <functional>
#include <map>
#include <string>

namespace doppio {

// A `doppio <name>` sub-command. Each command registers itself from its own source file;
// main() only looks the name up. Flags are gflags, defined in the command's file.
struct Command {
  std::string summary;
  // Returns the process exit code; throws doppio::Error for user errors.
  std::function<int()> run;
};

std::map<std::string, Command>& CommandTable();

struct CommandRegisterer {
  CommandRegisterer(const std::string& name, const std::string& summary, std::function<int()> run) {
    CommandTable()[name] = Command{summary, std::move(run)};
  }
};

}  // namespace doppio

#define DOPPIO_REGISTER_COMMAND(name, summary, function) \
  static ::doppio::CommandRegisterer g_command_##name(#name, summary, function)
