#include "doppio/data/shard.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "data_test_helpers.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

// The k-th batch of rank r as record indices.
std::vector<std::uint64_t> RankBatch(const ShardSequence& s, std::uint64_t k) {
  std::vector<std::uint64_t> records;
  for (int j = 0; j < s.batch(); ++j) records.push_back(s.RecordIndex(k, j));
  return records;
}

TEST(ShardSequenceTest, UnionOfRanksIsTheSingleProcessBatch) {
  for (int size = 1; size <= 4; ++size) {
    for (int batch : {1, 3, 4}) {
      // Divisible by size * batch, not divisible, and smaller than one global batch.
      for (std::uint64_t n : {std::uint64_t(size * batch * 5), std::uint64_t(size * batch * 5 + 3),
                              std::uint64_t(17), std::uint64_t(2)}) {
        SCOPED_TRACE("size " + std::to_string(size) + " batch " + std::to_string(batch) + " n " +
                     std::to_string(n));
        ShardSequence single(0, 1, size * batch, n);
        std::vector<ShardSequence> ranks;
        for (int r = 0; r < size; ++r) ranks.emplace_back(r, size, batch, n);
        // Equal batch counts per epoch.
        for (const auto& rank : ranks) {
          EXPECT_EQ(rank.batches_per_epoch(), single.batches_per_epoch());
        }
        // Three epochs, so wrap-around is covered several times.
        const std::uint64_t batches = 3 * single.batches_per_epoch() + 2;
        for (std::uint64_t k = 0; k < batches; ++k) {
          std::vector<std::uint64_t> together;
          for (const auto& rank : ranks) {
            const auto part = RankBatch(rank, k);
            together.insert(together.end(), part.begin(), part.end());
          }
          EXPECT_EQ(together, RankBatch(single, k)) << "batch " << k;
        }
      }
    }
  }
}

TEST(ShardSequenceTest, ShardsAreDisjointContiguousAndCoverTheSet) {
  for (int size = 1; size <= 4; ++size) {
    const int batch = 3;
    for (std::uint64_t n : {std::uint64_t(size * batch * 4), std::uint64_t(size * batch * 4 + 5)}) {
      SCOPED_TRACE("size " + std::to_string(size) + " n " + std::to_string(n));
      std::set<std::uint64_t> positions, records;
      std::uint64_t epoch = 0;
      for (int r = 0; r < size; ++r) {
        ShardSequence s(r, size, batch, n);
        epoch = s.batches_per_epoch();
        for (std::uint64_t k = 0; k < epoch; ++k) {
          for (int j = 0; j < batch; ++j) {
            // Positions (before wrapping) never repeat across ranks.
            EXPECT_TRUE(positions.insert(s.Position(k, j)).second);
            records.insert(s.RecordIndex(k, j));
            // Contiguous within a batch.
            if (j > 0) EXPECT_EQ(s.Position(k, j), s.Position(k, j - 1) + 1);
          }
        }
      }
      // One epoch covers every record; when n is not a multiple of size * batch, the last
      // batches wrap to the start of the set.
      EXPECT_EQ(records.size(), n);
      EXPECT_EQ(positions.size(), epoch * size * batch);
      if (n % (size * batch) == 0) EXPECT_EQ(positions.size(), n);
    }
  }
}

TEST(ShardSequenceTest, WrapAroundContinuesFromTheStart) {
  // 10 records, 2 ranks of batch 3: global batches [0..5], [6..9,0,1], [2..7], ...
  ShardSequence r0(0, 2, 3, 10), r1(1, 2, 3, 10);
  EXPECT_EQ(RankBatch(r0, 0), (std::vector<std::uint64_t>{0, 1, 2}));
  EXPECT_EQ(RankBatch(r1, 0), (std::vector<std::uint64_t>{3, 4, 5}));
  EXPECT_EQ(RankBatch(r0, 1), (std::vector<std::uint64_t>{6, 7, 8}));
  EXPECT_EQ(RankBatch(r1, 1), (std::vector<std::uint64_t>{9, 0, 1}));
  EXPECT_EQ(RankBatch(r0, 2), (std::vector<std::uint64_t>{2, 3, 4}));
  EXPECT_EQ(RankBatch(r1, 2), (std::vector<std::uint64_t>{5, 6, 7}));
  // An offset shifts every rank alike.
  ShardSequence o0(0, 2, 3, 10, 4), o1(1, 2, 3, 10, 4);
  EXPECT_EQ(RankBatch(o0, 0), (std::vector<std::uint64_t>{4, 5, 6}));
  EXPECT_EQ(RankBatch(o1, 0), (std::vector<std::uint64_t>{7, 8, 9}));
  EXPECT_EQ(RankBatch(o0, 1), (std::vector<std::uint64_t>{0, 1, 2}));
}

TEST(ShardedReaderTest, ReadsTheSequenceFromAnLmdb) {
  TempDir dir;
  const std::string path = dir.path() + "/db";
  const int n = 23;
  std::vector<std::string> values;
  for (int i = 0; i < n; ++i) values.push_back("record-" + std::to_string(i));
  testing_data::WriteLmdb(path, values);
  auto db = db::OpenLMDB(path, db::Mode::kRead);
  for (int size = 1; size <= 4; ++size) {
    for (int r = 0; r < size; ++r) {
      ShardedReader reader(db.get(), r, size, 4, 5);
      ShardSequence expected(r, size, 4, n, 5);
      for (std::uint64_t k = 0; k < 12; ++k) {
        for (int j = 0; j < 4; ++j) {
          const auto index = expected.RecordIndex(k, j);
          if (j == 0) EXPECT_EQ(reader.Peek().index, index);
          const ShardedReader::Record record = reader.Next();
          EXPECT_EQ(record.index, index);
          EXPECT_EQ(std::string(record.value), "record-" + std::to_string(index));
          EXPECT_EQ(std::string(record.key), FormatKey(index, 8));
        }
      }
    }
  }
}

TEST(ShardDataLayersTest, SetsEveryDataAndImageDataLayer) {
  NetParameter param = ParseText<NetParameter>(
      "layer { name: 'a' type: 'Data' data_param { batch_size: 4 } } "
      "layer { name: 'b' type: 'ImageData' } "
      "layer { name: 'c' type: 'ReLU' }");
  EXPECT_EQ(ShardDataLayers(&param, 2, 3), 2);
  EXPECT_EQ(param.layer(0).data_param().shard_rank(), 2);
  EXPECT_EQ(param.layer(0).data_param().shard_size(), 3);
  EXPECT_EQ(param.layer(0).data_param().batch_size(), 4u);
  EXPECT_EQ(param.layer(1).image_data_param().shard_rank(), 2);
  EXPECT_EQ(param.layer(1).image_data_param().shard_size(), 3);
  EXPECT_FALSE(param.layer(2).has_data_param());
}

TEST(ShardedReaderTest, EmptyLmdbHasNoRecords) {
  TempDir dir;
  testing_data::WriteLmdb(dir.path() + "/db", {});
  auto db = db::OpenLMDB(dir.path() + "/db", db::Mode::kRead);
  EXPECT_EQ(db->size(), 0u);
}

}  // namespace
}  // namespace doppio
