#include "doppio/device/conv_algo_cache.hpp"

#include <glog/logging.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "doppio/util/error.hpp"
#include "doppio/util/io.hpp"

namespace doppio {

namespace {
constexpr char kMagic[] = "doppio cudnn convolution algorithms 1";
constexpr char kDevicePrefix[] = "device ";
}  // namespace

ConvAlgoCache::ConvAlgoCache(std::string path, std::string device)
    : path_(std::move(path)), device_(std::move(device)) {
  DOPPIO_ENSURE(device_.find('\n') == std::string::npos) << "a device name with a line break";
  Load();
}

void ConvAlgoCache::Load() {
  std::ifstream in(path_);
  if (!in) return;  // no measurements yet
  std::string line;
  const auto ignore = [this](const std::string& why) {
    LOG(WARNING) << "cuDNN algorithm cache " << path_ << ": " << why
                 << "; ignored, and rewritten with this run's measurements";
    choices_.clear();
  };
  if (!std::getline(in, line) || line != kMagic) {
    return ignore("not a Doppio algorithm cache (its first line is not '" + std::string(kMagic) +
                  "')");
  }
  if (!std::getline(in, line) || line.rfind(kDevicePrefix, 0) != 0) {
    return ignore("line 2 does not name the device");
  }
  const std::string device = line.substr(sizeof(kDevicePrefix) - 1);
  if (device != device_) {
    return ignore("measured on " + device + ", not on this " + device_);
  }
  for (int number = 3; std::getline(in, line); ++number) {
    std::istringstream fields(line);
    std::string key, rest;
    Choice choice;
    if (!(fields >> key >> choice.algo >> choice.math) || (fields >> rest) || choice.algo < 0 ||
        choice.math < 0) {
      return ignore("line " + std::to_string(number) + " is not '<problem> <algorithm> <math>'");
    }
    choices_[key] = choice;
  }
}

std::optional<ConvAlgoCache::Choice> ConvAlgoCache::Find(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = choices_.find(key);
  if (it == choices_.end()) return std::nullopt;
  return it->second;
}

void ConvAlgoCache::Add(const std::string& key, const Choice& choice) {
  DOPPIO_ENSURE(!key.empty() && key.find_first_of(" \t\n") == std::string::npos)
      << "an algorithm cache key must be one word, not '" << key << "'";
  std::lock_guard<std::mutex> lock(mutex_);
  choices_[key] = choice;
  std::ostringstream out;
  out << kMagic << "\n" << kDevicePrefix << device_ << "\n";
  for (const auto& [k, c] : choices_) out << k << " " << c.algo << " " << c.math << "\n";
  try {
    const std::filesystem::path folder = std::filesystem::path(path_).parent_path();
    if (!folder.empty()) std::filesystem::create_directories(folder);
    WriteFileAtomically(out.str(), path_);
  } catch (const std::exception& e) {
    LOG(WARNING) << "cuDNN algorithm cache not saved: " << e.what();
  }
}

std::size_t ConvAlgoCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return choices_.size();
}

}  // namespace doppio
