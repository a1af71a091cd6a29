// doppio: train, test and time networks. `doppio <command> --flags`; `doppio --help`.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "command.hpp"
#include "common_flags.hpp"
#include "doppio/core/common.hpp"
#include "tool_faults.hpp"
#include "wait_policy.hpp"

namespace doppio {

std::map<std::string, Command>& CommandTable() {
  static std::map<std::string, Command> table;
  return table;
}

std::vector<std::string>& CommandArguments() {
  static std::vector<std::string> arguments;
  return arguments;
}

namespace {
// A flag defined by one command and read by others says so at the start of its
// description: "time, scale: ...".
bool FlagServesCommand(const std::string& description, const std::string& command) {
  const std::size_t colon = description.find(':');
  if (colon == std::string::npos) return false;
  const std::string names = description.substr(0, colon);
  if (names.find_first_not_of("abcdefghijklmnopqrstuvwxyz_, ") != std::string::npos) return false;
  for (std::size_t start = 0; start <= names.size();) {
    std::size_t end = names.find(',', start);
    if (end == std::string::npos) end = names.size();
    std::string name = names.substr(start, end - start);
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    if (name == command) return true;
    start = end + 1;
  }
  return false;
}

// Whether `command` takes `flag`: a flag of its own file, a common flag, or one that says it
// serves the command. Flags defined outside tools/doppio/ (glog's, the library's) serve all.
bool CommandTakesFlag(const gflags::CommandLineFlagInfo& flag, const std::string& command) {
  return flag.filename.find("tools/doppio/") == std::string::npos ||
         flag.filename.find("tools/doppio/" + command + "_command") != std::string::npos ||
         flag.filename.find("tools/doppio/common_flags") != std::string::npos ||
         FlagServesCommand(flag.description, command);
}

std::string Usage() {
  std::string usage =
      "command line brew\n"
      "usage: doppio <command> <args>\n\n"
      "commands:\n";
  for (const auto& entry : CommandTable()) {
    usage += "  " + entry.first + std::string(16 - std::min<size_t>(15, entry.first.size()), ' ') +
             entry.second.summary + "\n";
  }
  usage += "\n`doppio <command> --help` lists a command's flags.";
  return usage;
}

void PrintCommandFlags(const std::string& command) {
  std::cout << "doppio " << command << ": " << CommandTable()[command].summary << "\n\nflags:\n";
  std::vector<gflags::CommandLineFlagInfo> flags;
  gflags::GetAllFlags(&flags);
  for (const auto& flag : flags) {
    if (flag.filename.find("tools/doppio/") == std::string::npos ||
        !CommandTakesFlag(flag, command))
      continue;
    std::cout << "  --" << flag.name << " (" << flag.description << ") default: \""
              << flag.default_value << "\"\n";
  }
}

// gflags' flags are global, so `doppio train --threads=2` would parse and then be ignored:
// a flag set on the command line that the command does not take is an error naming the
// commands that do.
void RefuseOtherCommandsFlags(const std::string& command) {
  std::vector<gflags::CommandLineFlagInfo> flags;
  gflags::GetAllFlags(&flags);
  for (const auto& flag : flags) {
    if (flag.is_default || CommandTakesFlag(flag, command)) continue;
    std::vector<std::string> owners;
    for (const auto& entry : CommandTable()) {
      if (CommandTakesFlag(flag, entry.first)) owners.push_back("`doppio " + entry.first + "`");
    }
    std::string named;
    for (std::size_t i = 0; i < owners.size(); ++i) {
      named += (i == 0 ? "" : i + 1 == owners.size() ? " and " : ", ") + owners[i];
    }
    throw Error("doppio " + command + ": --" + flag.name + " is a flag of " + named + ", not of " +
                    command + " (`doppio help " + command + "` lists its flags)",
                ExitCode::kUsage);
  }
}

// `doppio help` is `doppio --help`; `doppio help train` is `doppio train --help`, the form
// scripts/check_docs.py reads to check every command and flag the documentation names.
int Help() {
  const std::vector<std::string>& arguments = CommandArguments();
  if (arguments.empty()) {
    std::cout << Usage() << "\n";
    return 0;
  }
  if (arguments.size() > 1) {
    throw Error("doppio help: one command at a time, not " + std::to_string(arguments.size()),
                ExitCode::kUsage);
  }
  if (CommandTable().count(arguments[0]) == 0) {
    throw Error("doppio help: unknown command '" + arguments[0] + "'; `doppio help` lists them",
                ExitCode::kUsage);
  }
  PrintCommandFlags(arguments[0]);
  return 0;
}
}  // namespace

DOPPIO_REGISTER_COMMAND_WITH_ARGUMENTS(help,
                                       "list the commands, or with a command's name its flags",
                                       Help);

}  // namespace doppio

// Where the first start of the process tells the second why it chose OpenMP's wait policy.
static constexpr char kWaitPolicyReason[] = "DOPPIO_WAIT_POLICY_REASON";

int main(int argc, char** argv) {
  // OpenMP's threads (oneDNN's and Doppio's pool) spin while they wait on a quiet machine and
  // sleep on a busy one (tools/lib/wait_policy.hpp says why). libgomp reads OMP_WAIT_POLICY
  // once, when it is loaded, before main: so the process starts itself again with it set, and
  // says why for the log. A user's value wins.
  if (std::getenv("OMP_WAIT_POLICY") == nullptr) {
    const doppio::WaitPolicyChoice choice =
        doppio::ChooseWaitPolicy(doppio::OtherRunnableTasks(), doppio::JobRanks());
    setenv("OMP_WAIT_POLICY", choice.policy.c_str(), 1);
    setenv(kWaitPolicyReason, choice.reason.c_str(), 1);
    execv("/proc/self/exe", argv);
    // Where /proc is missing the process goes on with OpenMP's default policy.
    unsetenv("OMP_WAIT_POLICY");
    unsetenv(kWaitPolicyReason);
  }
  FLAGS_alsologtostderr = 1;
  FLAGS_colorlogtostderr = false;
  // Caffe's log prefix (I1124 16:06:39.123456 ...), which Caffe's log parsers expect;
  // --log_year_in_prefix brings Debian glog's year back.
  FLAGS_log_year_in_prefix = false;
  gflags::SetUsageMessage(doppio::Usage());
  gflags::SetVersionString("0.1.0");
  if (argc == 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::cout << doppio::Usage() << "\n";
    return 0;
  }
  // Per-command help: `doppio train --help` shows only the flags that matter to train.
  if (argc >= 3 && std::string(argv[2]) == "--help" && doppio::CommandTable().count(argv[1])) {
    doppio::PrintCommandFlags(argv[1]);
    return 0;
  }
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  google::InstallFailureSignalHandler();
  // glog reports SIGTERM as a crash, with a stack trace. Outside training (where
  // SignalHandler turns it into a stop) it is an ordinary request to end, such as mpirun's
  // second SIGTERM to ranks that have already stopped on the first.
  std::signal(SIGTERM, SIG_DFL);
  if (argc < 2 || doppio::CommandTable().count(argv[1]) == 0) {
    if (argc >= 2) std::cerr << "doppio: unknown command '" << argv[1] << "'\n\n";
    std::cerr << doppio::Usage() << "\n";
    return argc == 1 ? 1 : 2;
  }
  if (argc > 2 && !doppio::CommandTable()[argv[1]].takes_arguments) {
    std::cerr << "doppio " << argv[1] << ": unexpected argument '" << argv[2]
              << "' (flags are written --name=value)\n\n"
              << doppio::Usage() << "\n";
    return 2;
  }
  for (int i = 2; i < argc; ++i) doppio::CommandArguments().push_back(argv[i]);
  doppio::InstallToolFaults();
  try {
    doppio::RefuseOtherCommandsFlags(argv[1]);
    // Every command that works gets its threads before any work (help only prints).
    std::unique_ptr<doppio::ThreadBudget> threads;
    if (std::string(argv[1]) != "help") {
      DOPPIO_ENSURE(FLAGS_threads >= 1 || gflags::GetCommandLineFlagInfoOrDie("threads").is_default)
          << "--threads must be at least 1, not " << FLAGS_threads
          << " (leave it out for the cores this process may use shared among its node's ranks)";
      threads =
          std::make_unique<doppio::ThreadBudget>(FLAGS_threads, doppio::LocalRanksFromLauncher());
      const char* policy = std::getenv("OMP_WAIT_POLICY");
      const char* reason = std::getenv(kWaitPolicyReason);
      if (policy != nullptr) {
        LOG(INFO) << "OpenMP's waiting threads: OMP_WAIT_POLICY=" << policy << " ("
                  << (reason != nullptr ? reason : "set by the environment") << ")";
      }
      unsetenv(kWaitPolicyReason);
    }
    return doppio::CommandTable()[argv[1]].run();
  } catch (const doppio::Error& error) {
    LOG(ERROR) << error.what();
    std::fflush(nullptr);
    return static_cast<int>(error.code());
  } catch (const std::exception& error) {
    LOG(ERROR) << "internal error: " << error.what();
    return static_cast<int>(doppio::ExitCode::kInternal);
  }
}
