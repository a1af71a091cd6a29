#pragma once

// A small generated classification data set in LMDB for the parallel tests: record i is a
// 1 x size x size image of class (7 i) mod 4, a bright band at the class's rows over a little
// structured noise.
#include <string>

#include "doppio/data/convert.hpp"
#include "doppio/data/db.hpp"

namespace doppio {
namespace parallel_test {

inline Datum Record(int i, int size = 4) {
  Datum datum;
  const int label = (i * 7) % 4;
  datum.set_channels(1);
  datum.set_height(size);
  datum.set_width(size);
  datum.set_label(label);
  std::string pixels(static_cast<std::size_t>(size) * size, '\0');
  const int band = size / 4;
  for (int h = 0; h < size; ++h) {
    for (int w = 0; w < size; ++w) {
      const bool bright = h / band == label;
      pixels[h * size + w] =
          static_cast<char>((bright ? 170 : 20) + (i * 37 + h * 11 + w * 5) % 60);
    }
  }
  datum.set_data(pixels);
  return datum;
}

// Records first .. first + count - 1 under keys 00000000, 00000001, ...
inline void WriteRecords(const std::string& path, int first, int count, int size = 4) {
  auto db = db::OpenLMDB(path, db::Mode::kNew);
  auto txn = db->NewTransaction();
  for (int i = 0; i < count; ++i) {
    txn->Put(FormatKey(i, 8), Record(first + i, size).SerializeAsString());
  }
  txn->Commit();
}

}  // namespace parallel_test
}  // namespace doppio
