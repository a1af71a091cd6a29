#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace doppio {

// The convolution algorithms cuDNN measured (cudnnFind*AlgorithmEx), one per distinct
// problem, kept in a text file so that later runs skip the search. A problem's key names
// everything the choice depends on (direction, type, shapes, geometry, math type, workspace
// limit); the file's header names the device it was measured on (GPU, compute capability,
// driver and cuDNN versions). A file written for another device, or one that does not parse,
// is ignored with a warning naming it and why, and rewritten with this run's measurements.
// Every Add rewrites the file atomically (util/io.hpp), so that ranks sharing it on a node
// never read half a file; two that measure at once each keep what they measured, and the
// last to write wins the file. Thread-safe. Knows nothing of CUDA: the device part fills it.
class ConvAlgoCache {
 public:
  struct Choice {
    int algo = 0;  // the cudnnConvolution*Algo_t
    int math = 0;  // the cudnnMathType_t it ran with
    bool operator==(const Choice& other) const { return algo == other.algo && math == other.math; }
  };

  // Reads `path` where it exists. `device` must not hold a line break.
  ConvAlgoCache(std::string path, std::string device);

  std::optional<Choice> Find(const std::string& key) const;
  // Records `choice` for `key` (no blanks in a key) and writes the file. A file that cannot
  // be written is a warning, not an error: the run goes on, measuring again next time.
  void Add(const std::string& key, const Choice& choice);

  const std::string& path() const { return path_; }
  std::size_t size() const;

 private:
  void Load();

  const std::string path_;
  const std::string device_;
  mutable std::mutex mutex_;
  std::map<std::string, Choice> choices_;
};

}  // namespace doppio
