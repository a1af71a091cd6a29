#include "doppio/solvers/snapshot_search.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <regex>
#include <utility>

#include "doppio/solvers/solver.hpp"
#include "doppio/util/error.hpp"

namespace doppio {

std::optional<FoundSnapshot> NewestCompleteSnapshot(const std::string& snapshot_prefix,
                                                    std::vector<std::string>* passed_over) {
  namespace fs = std::filesystem;
  const fs::path prefix(snapshot_prefix);
  const fs::path folder = prefix.has_parent_path() ? prefix.parent_path() : fs::path(".");
  const std::string stem = prefix.filename().string();
  if (!fs::is_directory(folder)) return std::nullopt;
  // Solver::SnapshotFilename's names; anything else in the folder is not ours.
  const std::regex name(std::regex_replace(stem, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
                        R"(_iter_(\d{1,9})\.solverstate(\.h5)?)");
  std::vector<std::pair<std::int64_t, fs::path>> found;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(folder, error)) {
    std::smatch match;
    const std::string file = entry.path().filename().string();
    if (std::regex_match(file, match, name)) found.emplace_back(std::stoll(match[1]), entry.path());
  }
  DOPPIO_ENSURE(!error) << "snapshot_prefix '" << snapshot_prefix << "': cannot list "
                        << folder.string() << " (" << error.message() << ")";
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a > b; });
  for (const auto& [iter, path] : found) {
    SolverState state;
    NetParameter weights;
    std::string weights_file;
    try {
      Solver<float>::ReadSnapshot(path.string(), &state, &weights, &weights_file);
    } catch (const Error& incomplete) {
      passed_over->push_back(path.string() + ": " + incomplete.what());
      continue;
    }
    if (state.iter() != iter) {
      passed_over->push_back(path.string() + ": holds iteration " + std::to_string(state.iter()) +
                             ", not the " + std::to_string(iter) + " of its name");
      continue;
    }
    return FoundSnapshot{path.string(), static_cast<int>(iter)};
  }
  return std::nullopt;
}

}  // namespace doppio
