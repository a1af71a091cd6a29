#include "doppio/data/db.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "data_test_helpers.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

using testing_data::WriteLmdb;

TEST(LmdbTest, WritesAndReadsRecordsInKeyOrder) {
  TempDir dir;
  const std::string path = dir.path() + "/db";
  // Written out of order; LMDB keeps keys sorted.
  WriteLmdb(path, {"b-value", "a-value", "c-value"}, {"key2", "key1", "key3"});
  auto db = db::OpenLMDB(path, db::Mode::kRead);
  EXPECT_EQ(db->size(), 3u);
  auto cursor = db->NewCursor();
  std::vector<std::string> keys, values;
  for (; cursor->valid(); cursor->Next()) {
    keys.emplace_back(cursor->key());
    values.emplace_back(cursor->value());
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"key1", "key2", "key3"}));
  EXPECT_EQ(values, (std::vector<std::string>{"a-value", "b-value", "c-value"}));
  cursor->SeekToFirst();
  ASSERT_TRUE(cursor->valid());
  EXPECT_EQ(cursor->key(), "key1");
}

TEST(LmdbTest, ManyCommitsAndLargeValues) {
  TempDir dir;
  const std::string path = dir.path() + "/db";
  {
    // A 256 KiB map must grow several times to take 4 MB.
    auto db = db::OpenLMDB(path, db::Mode::kNew, 256 << 10);
    auto txn = db->NewTransaction();
    const std::string big(100 << 10, 'x');
    for (int i = 0; i < 40; ++i) {
      txn->Put(FormatKey(i, 8), big + std::to_string(i));
      if (i % 7 == 6) txn->Commit();
    }
    txn->Commit();
  }
  auto db = db::OpenLMDB(path, db::Mode::kRead);
  EXPECT_EQ(db->size(), 40u);
  auto cursor = db->NewCursor();
  for (int i = 0; i < 40; ++i, cursor->Next()) {
    ASSERT_TRUE(cursor->valid());
    EXPECT_EQ(cursor->value().substr(100 << 10), std::to_string(i));
  }
}

// A reader of a folder this process is still writing shares the writer's environment (LMDB
// forbids opening one twice in a process): it sees every commit, even one that grew the map
// past the size a second environment would have mapped (MDB_MAP_RESIZED there).
TEST(LmdbTest, AReaderSharesTheOpenWritersEnvironment) {
  TempDir dir;
  const std::string path = dir.path() + "/db";
  auto writer = db::OpenLMDB(path, db::Mode::kNew, 256 << 10);
  auto first = writer->NewTransaction();
  first->Put("00000000", "first");
  first->Commit();
  auto reader = db::OpenLMDB(path, db::Mode::kRead);
  EXPECT_EQ(reader->size(), 1u);
  auto txn = writer->NewTransaction();
  const std::string big(100 << 10, 'x');
  for (int i = 1; i < 40; ++i) txn->Put(FormatKey(i, 8), big);
  txn->Commit();
  EXPECT_EQ(reader->size(), 40u);
  auto cursor = reader->NewCursor();
  ASSERT_TRUE(cursor->valid());
  EXPECT_EQ(cursor->value(), "first");
}

TEST(LmdbTest, MissingFolderNamesThePath) {
  EXPECT_ERROR_WITH(db::OpenLMDB("/no/such/lmdb", db::Mode::kRead), "/no/such/lmdb",
                    "no such folder");
}

TEST(LmdbTest, PlainFileIsNotAnLmdb) {
  TempDir dir;
  const std::string path = dir.path() + "/file";
  std::ofstream(path) << "hello";
  EXPECT_ERROR_WITH(db::OpenLMDB(path, db::Mode::kRead), path, "not an LMDB");
  std::filesystem::create_directory(dir.path() + "/empty");
  EXPECT_ERROR_WITH(db::OpenLMDB(dir.path() + "/empty", db::Mode::kRead), "not an LMDB");
}

TEST(LmdbTest, NewRefusesAnExistingPath) {
  TempDir dir;
  WriteLmdb(dir.path() + "/db", {"x"});
  EXPECT_ERROR_WITH(db::OpenLMDB(dir.path() + "/db", db::Mode::kNew), "already exists");
}

TEST(LmdbTest, LevelDbIsNotSupported) {
  TempDir dir;
  EXPECT_ERROR_WITH(db::OpenDB(DataParameter::LEVELDB, dir.path(), db::Mode::kRead, "layer 'x'"),
                    "layer 'x'", "LEVELDB", "not supported");
  EXPECT_ERROR_WITH(db::OpenDB("leveldb", dir.path(), db::Mode::kRead, "tool"), "LEVELDB",
                    "not supported");
  EXPECT_ERROR_WITH(db::OpenDB("rocksdb", dir.path(), db::Mode::kRead, "tool"),
                    "unknown backend 'rocksdb'");
  WriteLmdb(dir.path() + "/db", {"x"});
  EXPECT_EQ(db::OpenDB("LMDB", dir.path() + "/db", db::Mode::kRead, "tool")->size(), 1u);
}

TEST(LmdbTest, ErrorsNameTheCaller) {
  EXPECT_ERROR_WITH(db::OpenDB(DataParameter::LMDB, "/no/such", db::Mode::kRead, "layer 'd'"),
                    "layer 'd'", "/no/such");
}

}  // namespace
}  // namespace doppio
