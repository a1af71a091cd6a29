#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace doppio {

// A `doppio <name>` sub-command. Each command registers itself from its own source file;
// main() only looks the name up. Flags are gflags, defined in the command's file.
struct Command {
  std::string summary;
  // Returns the process exit code; throws doppio::Error for user errors.
  std::function<int()> run;
  // Whether the command takes positional arguments (e.g. `doppio classify a.png b.png`);
  // they are in CommandArguments(). Other commands refuse them.
  bool takes_arguments = false;
};

std::map<std::string, Command>& CommandTable();
// The positional arguments after the command name (flags removed).
std::vector<std::string>& CommandArguments();

struct CommandRegisterer {
  CommandRegisterer(const std::string& name, const std::string& summary, std::function<int()> run,
                    bool takes_arguments = false) {
    CommandTable()[name] = Command{summary, std::move(run), takes_arguments};
  }
};

}  // namespace doppio

#define DOPPIO_REGISTER_COMMAND(name, summary, function) \
  static ::doppio::CommandRegisterer g_command_##name(#name, summary, function)
#define DOPPIO_REGISTER_COMMAND_WITH_ARGUMENTS(name, summary, function) \
  static ::doppio::CommandRegisterer g_command_##name(#name, summary, function, true)
