// Small generated data sets for the data pipeline's tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cli_test_util.hpp"
#include "doppio/core/common.hpp"
#include "doppio/data/convert.hpp"
#include "doppio/data/db.hpp"
#include "expect_error.hpp"
#include "test_util.hpp"

namespace doppio {
namespace testing_data {

// A raw uint8 Datum whose pixel (c, h, w) is value(c, h, w).
inline Datum MakeDatum(int channels, int height, int width, int label,
                       const std::function<int(int, int, int)>& value) {
  Datum datum;
  datum.set_channels(channels);
  datum.set_height(height);
  datum.set_width(width);
  datum.set_label(label);
  std::string data(static_cast<std::size_t>(channels) * height * width, '\0');
  for (int c = 0; c < channels; ++c) {
    for (int h = 0; h < height; ++h) {
      for (int w = 0; w < width; ++w) {
        data[(c * height + h) * width + w] = static_cast<char>(value(c, h, w) & 0xff);
      }
    }
  }
  datum.set_data(data);
  return datum;
}

// Writes records with keys "%08d" (or the given keys) to a new LMDB.
inline void WriteLmdb(const std::string& path, const std::vector<std::string>& values,
                      const std::vector<std::string>& keys = {}) {
  auto db = db::OpenLMDB(path, db::Mode::kNew);
  auto txn = db->NewTransaction();
  for (std::size_t i = 0; i < values.size(); ++i) {
    txn->Put(keys.empty() ? FormatKey(i, 8) : keys[i], values[i]);
  }
  txn->Commit();
}

inline void WriteDatumLmdb(const std::string& path, const std::vector<Datum>& datums) {
  std::vector<std::string> values;
  for (const Datum& datum : datums) values.push_back(datum.SerializeAsString());
  WriteLmdb(path, values);
}

// N records of shape 1 x 2 x 3 whose label is their index and whose pixels are index + k.
inline std::vector<Datum> IndexedDatums(int n, int channels = 1, int height = 2, int width = 3) {
  std::vector<Datum> datums;
  for (int i = 0; i < n; ++i) {
    datums.push_back(MakeDatum(channels, height, width, i, [&](int c, int h, int w) {
      return i + (c * height + h) * width + w;
    }));
  }
  return datums;
}

inline std::vector<Datum> ReadAllDatums(const std::string& path, std::vector<std::string>* keys) {
  auto db = db::OpenLMDB(path, db::Mode::kRead);
  std::vector<Datum> datums;
  for (auto cursor = db->NewCursor(); cursor->valid(); cursor->Next()) {
    Datum datum;
    EXPECT_TRUE(
        datum.ParseFromArray(cursor->value().data(), static_cast<int>(cursor->value().size())));
    datums.push_back(datum);
    if (keys != nullptr) keys->emplace_back(cursor->key());
  }
  return datums;
}

struct ToolResult {
  int exit_code;
  std::string output;
};
// Runs build/tools/<tool> with `args` (stdout and stderr together).
inline ToolResult RunTool(const std::string& tool, const std::string& args) {
  const cli_test::Result result = cli_test::RunShell(BinaryDir() + "/tools/" + tool + " " + args);
  return {result.exit_code, result.output};
}

}  // namespace testing_data
}  // namespace doppio
