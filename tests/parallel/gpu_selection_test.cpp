// The choices behind `mpirun -np N doppio train --gpu=...`, as pure functions (they run on
// any machine): parsing --gpu, each local rank's device, and NCCL against the staged MPI
// path from the ranks' (host, device) pairs.
#include "doppio/parallel/gpu_selection.hpp"

#include <gtest/gtest.h>

#include "doppio/core/common.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

TEST(ParseGpuRequest, EmptyAllAndLists) {
  EXPECT_TRUE(ParseGpuRequest("").empty());
  const GpuRequest all = ParseGpuRequest("all");
  EXPECT_TRUE(all.all);
  EXPECT_TRUE(all.ids.empty());
  EXPECT_EQ(ParseGpuRequest("0").ids, std::vector<int>({0}));
  EXPECT_EQ(ParseGpuRequest("3,1,2").ids, std::vector<int>({3, 1, 2}));
  EXPECT_FALSE(ParseGpuRequest("3,1").all);
}

TEST(ParseGpuRequest, RejectsWhatIsNotADeviceId) {
  for (const char* bad : {"x", "-1", "0,", ",0", "0,,1", "1.5", "ALL", "0;1"}) {
    SCOPED_TRACE(bad);
    ExpectError([&] { ParseGpuRequest(bad); }, {"--gpu"});
  }
}

TEST(PickLocalGpu, AllGivesEachLocalRankItsOwnGpu) {
  const GpuRequest all = ParseGpuRequest("all");
  for (int rank = 0; rank < 4; ++rank) EXPECT_EQ(PickLocalGpu(all, rank, 4, 4), rank);
  EXPECT_EQ(PickLocalGpu(all, 1, 2, 8), 1);
}

TEST(PickLocalGpu, AllWithMoreLocalRanksThanGpusIsAClearError) {
  const GpuRequest all = ParseGpuRequest("all");
  // Every rank of the node refuses, not only those beyond the last GPU.
  ExpectError([&] { PickLocalGpu(all, 0, 3, 2); }, {"3 ranks run on this node"});
  ExpectError([&] { PickLocalGpu(all, 2, 3, 2); }, {"only 2 GPUs"});
  ExpectError([&] { PickLocalGpu(all, 0, 1, 0); }, {"no CUDA device"});
}

TEST(PickLocalGpu, ListIsTakenByLocalRank) {
  const GpuRequest list = ParseGpuRequest("2,0");
  EXPECT_EQ(PickLocalGpu(list, 0, 2, 4), 2);
  EXPECT_EQ(PickLocalGpu(list, 1, 2, 4), 0);
  // More ranks than entries: they share, in turn.
  EXPECT_EQ(PickLocalGpu(list, 2, 3, 4), 2);
  // One id: every rank on it.
  const GpuRequest one = ParseGpuRequest("1");
  for (int rank = 0; rank < 3; ++rank) EXPECT_EQ(PickLocalGpu(one, rank, 3, 2), 1);
}

TEST(PickLocalGpu, ListNamingAMissingDeviceIsAnError) {
  ExpectError([] { PickLocalGpu(ParseGpuRequest("0,5"), 1, 2, 2); }, {"no GPU 5"});
  // Without any device the id is left for GpuContext::Create, which says why there is none.
  EXPECT_EQ(PickLocalGpu(ParseGpuRequest("5"), 0, 1, 0), 5);
}

TEST(ChooseDeviceCommPath, NcclWhenEveryRankHasItsOwnGpu) {
  // Two nodes, two GPUs each: device ids repeat across nodes, which is fine.
  const std::vector<RankDevice> ranks = {{11, 0}, {11, 1}, {22, 0}, {22, 1}};
  const DeviceCommChoice choice = ChooseDeviceCommPath(ranks, true);
  EXPECT_EQ(choice.path, DeviceCommPath::kNccl);
  EXPECT_NE(choice.reason.find("own"), std::string::npos) << choice.reason;
}

TEST(ChooseDeviceCommPath, StagedWhenRanksShareAGpu) {
  const std::vector<RankDevice> ranks = {{11, 0}, {22, 0}, {11, 1}, {11, 0}};
  const DeviceCommChoice choice = ChooseDeviceCommPath(ranks, true);
  EXPECT_EQ(choice.path, DeviceCommPath::kStagedMpi);
  EXPECT_NE(choice.reason.find("ranks 0 and 3 share GPU 0"), std::string::npos) << choice.reason;
}

TEST(ChooseDeviceCommPath, StagedWithoutNcclOrWhenNotAllowed) {
  const std::vector<RankDevice> ranks = {{11, 0}, {11, 1}};
  const DeviceCommChoice unbuilt = ChooseDeviceCommPath(ranks, false);
  EXPECT_EQ(unbuilt.path, DeviceCommPath::kStagedMpi);
  EXPECT_NE(unbuilt.reason.find("no NCCL"), std::string::npos) << unbuilt.reason;
  EXPECT_EQ(ChooseDeviceCommPath(ranks, true, false).path, DeviceCommPath::kStagedMpi);
}

TEST(ChooseDeviceCommPath, OneRankHasItsOwnGpu) {
  EXPECT_EQ(ChooseDeviceCommPath({{5, 3}}, true).path, DeviceCommPath::kNccl);
}

TEST(HostNameHash, IsStable) { EXPECT_EQ(HostNameHash(), HostNameHash()); }

}  // namespace
}  // namespace doppio
