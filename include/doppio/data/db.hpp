#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "doppio/core/common.hpp"

namespace doppio {
namespace db {

// A key-value store of records (Caffe's data sets: LMDB of Datum). Only LMDB is implemented;
// LEVELDB is answered with an Error that says so.

// Iterates records in key order. key() and value() stay valid until the cursor moves.
class Cursor {
 public:
  virtual ~Cursor() = default;
  virtual void SeekToFirst() = 0;
  virtual void Next() = 0;
  virtual bool valid() const = 0;
  virtual std::string_view key() const = 0;
  virtual std::string_view value() const = 0;
};

// Buffers puts and writes them in one transaction on Commit.
class Transaction {
 public:
  virtual ~Transaction() = default;
  virtual void Put(std::string_view key, std::string_view value) = 0;
  virtual void Commit() = 0;
};

enum class Mode { kRead, kNew };

class DB {
 public:
  virtual ~DB() = default;
  virtual std::unique_ptr<Cursor> NewCursor() = 0;
  virtual std::unique_ptr<Transaction> NewTransaction() = 0;
  // Number of records.
  virtual std::size_t size() = 0;
  const std::string& source() const { return source_; }

 protected:
  std::string source_;
};

// Opens an LMDB folder. kRead: it must exist (Error naming the path otherwise); kNew: it must
// not exist yet and is created with a map of `map_bytes` (doubled whenever a commit fills
// it). Errors name the path and the cause. Every DB of one folder in a process shares one
// environment, a writer's while it is open: a reader sees its commits.
std::unique_ptr<DB> OpenLMDB(const std::string& source, Mode mode,
                             std::size_t map_bytes = std::size_t(1) << 30);

// Opens by backend: DataParameter::LMDB works, DataParameter::LEVELDB throws Error. `who`
// prefixes error messages (e.g. the layer's description).
std::unique_ptr<DB> OpenDB(DataParameter::DB backend, const std::string& source, Mode mode,
                           const std::string& who);
// By name, for the tools' --backend flag: "lmdb" works; "leveldb" and others throw Error.
std::unique_ptr<DB> OpenDB(const std::string& backend, const std::string& source, Mode mode,
                           const std::string& who);

}  // namespace db
}  // namespace doppio
