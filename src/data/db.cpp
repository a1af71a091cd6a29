#include "doppio/data/db.hpp"

#include <lmdb.h>
#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace doppio {
namespace db {

namespace {

namespace fs = std::filesystem;

std::string Where(const std::string& source) { return "LMDB '" + source + "'"; }

void CheckMdb(int rc, const std::string& source, const char* what) {
  DOPPIO_ENSURE(rc == MDB_SUCCESS)
      << Where(source) << ": " << what << " failed (" << mdb_strerror(rc) << ")";
}

// One LMDB environment; closed when the last DB, cursor or transaction using it goes.
struct Env {
  MDB_env* env = nullptr;
  ~Env() {
    if (env != nullptr) mdb_env_close(env);
  }
};

// LMDB must not open one environment twice in a process (closing either would drop the
// other's file locks), yet a train and a test net, several ranks in one test, or a reader of
// a data set that this process is still writing (the lmdb_record fuzz target) often read the
// same folder: they share one environment per folder, the writer's while it is open.
// Guards OpenEnvs(), and is held across opening a reader's environment so that two readers
// of one folder do not both open it.
std::mutex g_envs_mutex;
// By canonical folder path.
std::map<std::string, std::weak_ptr<Env>>& OpenEnvs() {
  static std::map<std::string, std::weak_ptr<Env>> envs;
  return envs;
}

std::string EnvKey(const std::string& source) {
  std::error_code error;
  return fs::canonical(source, error).string();
}

class LmdbCursor : public Cursor {
 public:
  LmdbCursor(std::shared_ptr<Env> env, const std::string& source)
      : env_(std::move(env)), source_(source) {
    CheckMdb(mdb_txn_begin(env_->env, nullptr, MDB_RDONLY, &txn_), source_, "mdb_txn_begin");
    int rc = mdb_dbi_open(txn_, nullptr, 0, &dbi_);
    if (rc == MDB_SUCCESS) rc = mdb_cursor_open(txn_, dbi_, &cursor_);
    if (rc != MDB_SUCCESS) {
      mdb_txn_abort(txn_);
      CheckMdb(rc, source_, "opening a cursor");
    }
    SeekToFirst();
  }
  ~LmdbCursor() override {
    mdb_cursor_close(cursor_);
    mdb_txn_abort(txn_);
  }
  void SeekToFirst() override { Get(MDB_FIRST); }
  void Next() override { Get(MDB_NEXT); }
  bool valid() const override { return valid_; }
  std::string_view key() const override {
    return {static_cast<const char*>(key_.mv_data), key_.mv_size};
  }
  std::string_view value() const override {
    return {static_cast<const char*>(value_.mv_data), value_.mv_size};
  }

 private:
  void Get(MDB_cursor_op op) {
    const int rc = mdb_cursor_get(cursor_, &key_, &value_, op);
    if (rc == MDB_NOTFOUND) {
      valid_ = false;
      return;
    }
    CheckMdb(rc, source_, "reading a record");
    valid_ = true;
  }

  std::shared_ptr<Env> env_;
  std::string source_;
  MDB_txn* txn_ = nullptr;
  MDB_dbi dbi_ = 0;
  MDB_cursor* cursor_ = nullptr;
  MDB_val key_{}, value_{};
  bool valid_ = false;
};

class LmdbTransaction : public Transaction {
 public:
  LmdbTransaction(std::shared_ptr<Env> env, const std::string& source)
      : handle_(std::move(env)), env_(handle_->env), source_(source) {}
  void Put(std::string_view key, std::string_view value) override {
    keys_.emplace_back(key);
    values_.emplace_back(value);
  }
  void Commit() override {
    // A full map is answered by doubling it and writing the whole batch again.
    while (true) {
      MDB_txn* txn = nullptr;
      CheckMdb(mdb_txn_begin(env_, nullptr, 0, &txn), source_, "mdb_txn_begin");
      MDB_dbi dbi;
      int rc = mdb_dbi_open(txn, nullptr, 0, &dbi);
      for (std::size_t i = 0; rc == MDB_SUCCESS && i < keys_.size(); ++i) {
        MDB_val key{keys_[i].size(), keys_[i].data()};
        MDB_val value{values_[i].size(), values_[i].data()};
        rc = mdb_put(txn, dbi, &key, &value, 0);
      }
      if (rc == MDB_SUCCESS) {
        rc = mdb_txn_commit(txn);
      } else {
        mdb_txn_abort(txn);
      }
      if (rc == MDB_MAP_FULL) {
        MDB_envinfo info;
        mdb_env_info(env_, &info);
        CheckMdb(mdb_env_set_mapsize(env_, info.me_mapsize * 2), source_, "growing the map");
        continue;
      }
      CheckMdb(rc, source_, "writing records");
      break;
    }
    keys_.clear();
    values_.clear();
  }

 private:
  std::shared_ptr<Env> handle_;
  MDB_env* env_;
  std::string source_;
  std::vector<std::string> keys_, values_;
};

class LmdbDB : public DB {
 public:
  LmdbDB(const std::string& source, Mode mode, std::size_t map_bytes) {
    source_ = source;
    std::error_code error;
    if (mode == Mode::kNew) {
      DOPPIO_ENSURE(!fs::exists(source, error))
          << Where(source) << ": already exists; remove it first or choose another path";
      DOPPIO_ENSURE(fs::create_directory(source, error))
          << Where(source) << ": cannot create the folder (" << error.message() << ")";
    } else {
      DOPPIO_ENSURE(fs::exists(source, error))
          << Where(source) << ": no such folder (build the data set first, e.g. with the "
          << "scripts under data/<set>/ or the convert_* tools)";
      DOPPIO_ENSURE(fs::is_directory(source, error))
          << Where(source) << ": not an LMDB (expected a folder holding data.mdb)";
      DOPPIO_ENSURE(fs::exists(fs::path(source) / "data.mdb", error))
          << Where(source) << ": not an LMDB (the folder holds no data.mdb)";
    }
    if (mode == Mode::kNew) {
      env_ = std::make_shared<Env>();
      CheckMdb(mdb_env_create(&env_->env), source, "mdb_env_create");
      CheckMdb(mdb_env_set_mapsize(env_->env, map_bytes), source, "mdb_env_set_mapsize");
      CheckMdb(mdb_env_open(env_->env, source.c_str(), MDB_NOTLS, 0664), source, "mdb_env_open");
      std::lock_guard<std::mutex> lock(g_envs_mutex);
      OpenEnvs()[EnvKey(source)] = env_;
    } else {
      env_ = SharedReadEnv(source);
    }
  }
  std::unique_ptr<Cursor> NewCursor() override {
    return std::make_unique<LmdbCursor>(env_, source_);
  }
  std::unique_ptr<Transaction> NewTransaction() override {
    return std::make_unique<LmdbTransaction>(env_, source_);
  }
  std::size_t size() override {
    MDB_txn* txn = nullptr;
    CheckMdb(mdb_txn_begin(env_->env, nullptr, MDB_RDONLY, &txn), source_, "mdb_txn_begin");
    MDB_dbi dbi;
    MDB_stat stat{};
    int rc = mdb_dbi_open(txn, nullptr, 0, &dbi);
    if (rc == MDB_SUCCESS) rc = mdb_stat(txn, dbi, &stat);
    mdb_txn_abort(txn);
    CheckMdb(rc, source_, "mdb_stat");
    return stat.ms_entries;
  }

 private:
  // The folder's open environment (a writer's or another reader's), else a new read-only one.
  static std::shared_ptr<Env> SharedReadEnv(const std::string& source) {
    const std::string key = EnvKey(source);
    std::lock_guard<std::mutex> lock(g_envs_mutex);
    if (auto env = OpenEnvs()[key].lock()) return env;
    auto env = std::make_shared<Env>();
    CheckMdb(mdb_env_create(&env->env), source, "mdb_env_create");
    // A data set on a read-only file system cannot take a lock file; reading without locks
    // is safe as long as nobody writes to it at the same time.
    int rc = mdb_env_open(env->env, source.c_str(), MDB_RDONLY | MDB_NOTLS, 0664);
    if (rc == EACCES || rc == EROFS) {
      rc = mdb_env_open(env->env, source.c_str(), MDB_RDONLY | MDB_NOTLS | MDB_NOLOCK, 0664);
    }
    CheckMdb(rc, source, "opening (is it an LMDB?)");
    OpenEnvs()[key] = env;
    return env;
  }

  std::shared_ptr<Env> env_;
};

}  // namespace

std::unique_ptr<DB> OpenLMDB(const std::string& source, Mode mode, std::size_t map_bytes) {
  return std::make_unique<LmdbDB>(source, mode, map_bytes);
}

std::unique_ptr<DB> OpenDB(DataParameter::DB backend, const std::string& source, Mode mode,
                           const std::string& who) {
  DOPPIO_ENSURE(backend == DataParameter::LMDB)
      << who << ": backend " << DataParameter::DB_Name(backend)
      << " is not supported; Doppio reads LMDB only (set backend: LMDB, and convert a LevelDB "
      << "data set with the convert_* tools)";
  try {
    return OpenLMDB(source, mode);
  } catch (const Error& error) {
    if (who.empty()) throw;
    throw Error(who + ": " + error.what(), error.code());
  }
}

std::unique_ptr<DB> OpenDB(const std::string& backend, const std::string& source, Mode mode,
                           const std::string& who) {
  DataParameter::DB parsed;
  std::string upper;
  for (char c : backend) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  DOPPIO_ENSURE(DataParameter::DB_Parse(upper, &parsed))
      << who << ": unknown backend '" << backend << "' (Doppio reads and writes lmdb)";
  return OpenDB(parsed, source, mode, who);
}

}  // namespace db
}  // namespace doppio
