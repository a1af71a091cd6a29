// The choices behind `mpirun -np N doppio train --gpu=...`, as pure functions (they run on
// any machine): parsing --gpu, each local rank's device, and NCCL against the staged MPI
// path from the ranks' (host, device, PCI location).
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
  ExpectError([&] { PickLocalGpu(all, 2, 3, 2); }, {"only 2 GPUs", "CUDA_VISIBLE_DEVICES"});
  ExpectError([&] { PickLocalGpu(all, 0, 1, 0); }, {"no CUDA device"});
}

// Slurm's --gpus-per-task: every rank sees only its own GPU, as device 0.
TEST(PickLocalGpu, AllTakesTheOneDeviceALauncherMadeVisibleToTheRank) {
  const GpuRequest all = ParseGpuRequest("all");
  for (int rank = 0; rank < 4; ++rank) EXPECT_EQ(PickLocalGpu(all, rank, 4, 1, true), 0);
  EXPECT_EQ(PickLocalGpu(all, 1, 2, 2, true), 1);
  ExpectError([&] { PickLocalGpu(all, 2, 3, 2, true); }, {"only 2 GPUs"});
  ExpectError([&] { PickLocalGpu(all, 1, 2, 1, false); }, {"only 1 GPU"});
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

TEST(PciBusIdKey, OneKeyForEverySpellingOfALocation) {
  const std::uint64_t key = PciBusIdKey("0000:3b:00.0");
  EXPECT_EQ(PciBusIdKey("0000:3B:00.0"), key);
  EXPECT_EQ(PciBusIdKey("00000000:3B:00.0"), key);  // nvidia-smi's eight-digit domain
  EXPECT_EQ(PciBusIdText(key), "0000:3b:00.0");
  // Every field counts.
  const char* others[] = {"0001:3b:00.0", "0000:3c:00.0", "0000:3b:01.0", "0000:3b:00.1"};
  for (const char* other : others) {
    SCOPED_TRACE(other);
    EXPECT_NE(PciBusIdKey(other), key);
    EXPECT_EQ(PciBusIdText(PciBusIdKey(other)), other);
  }
  EXPECT_EQ(PciBusIdText(PciBusIdKey("10000:ff:1f.7")), "10000:ff:1f.7");
}

TEST(PciBusIdKey, RejectsWhatIsNotAPciBusId) {
  for (const char* bad : {"", "3b:00.0", "0000:3b:00", "0000:3b:00.", "0000:3b:00.8",
                          "0000:3b:20.0", "0000:3g:00.0", "0000:100:00.0", "000000000:3b:00.0",
                          " 0000:3b:00.0", "0000:3b:00.0 ", "0000::00.0", "0000:3b.00:0"}) {
    SCOPED_TRACE(bad);
    ExpectError([&] { PciBusIdKey(bad); }, {"not a PCI bus id"});
  }
}

// PCI locations of four GPUs.
const std::uint64_t kGpuA = PciBusIdKey("0000:18:00.0");
const std::uint64_t kGpuB = PciBusIdKey("0000:3b:00.0");
const std::uint64_t kGpuC = PciBusIdKey("0000:86:00.0");

TEST(ChooseDeviceCommPath, NcclWhenEveryRankHasItsOwnGpu) {
  // Two nodes, two GPUs each: device ids and PCI locations repeat across nodes, which is fine.
  const std::vector<RankDevice> ranks = {
      {11, 0, kGpuA}, {11, 1, kGpuB}, {22, 0, kGpuA}, {22, 1, kGpuB}};
  const DeviceCommChoice choice = ChooseDeviceCommPath(ranks, true);
  EXPECT_EQ(choice.path, DeviceCommPath::kNccl);
  EXPECT_NE(choice.reason.find("own"), std::string::npos) << choice.reason;
}

TEST(ChooseDeviceCommPath, NcclWhenEachRankSeesItsOwnGpuAsDeviceZero) {
  // CUDA_VISIBLE_DEVICES=0 for one rank and =1 for the other, both run with --gpu=0: the same
  // index, different GPUs.
  const std::vector<RankDevice> ranks = {{11, 0, kGpuA}, {11, 0, kGpuB}, {11, 0, kGpuC}};
  EXPECT_EQ(ChooseDeviceCommPath(ranks, true).path, DeviceCommPath::kNccl);
}

TEST(ChooseDeviceCommPath, StagedWhenRanksShareAGpu) {
  const std::vector<RankDevice> ranks = {
      {11, 0, kGpuA}, {22, 0, kGpuA}, {11, 1, kGpuB}, {11, 0, kGpuA}};
  const DeviceCommChoice choice = ChooseDeviceCommPath(ranks, true);
  EXPECT_EQ(choice.path, DeviceCommPath::kStagedMpi);
  EXPECT_NE(choice.reason.find("ranks 0 and 3 share the GPU at PCI 0000:18:00.0"),
            std::string::npos)
      << choice.reason;
}

TEST(ChooseDeviceCommPath, StagedWhenOneGpuHasDifferentIndicesInTwoRanks) {
  // One rank sees every GPU (the GPU at kGpuB is its device 1), the other only kGpuB (its
  // device 0): different indices, one GPU.
  const std::vector<RankDevice> ranks = {{11, 1, kGpuB}, {11, 0, kGpuB}};
  const DeviceCommChoice choice = ChooseDeviceCommPath(ranks, true);
  EXPECT_EQ(choice.path, DeviceCommPath::kStagedMpi);
  EXPECT_NE(choice.reason.find("ranks 0 and 1 share the GPU at PCI 0000:3b:00.0"),
            std::string::npos)
      << choice.reason;
  EXPECT_NE(choice.reason.find("CUDA device 1 of rank 0 and 0 of rank 1"), std::string::npos)
      << choice.reason;
}

TEST(ChooseDeviceCommPath, StagedWithoutNcclOrWhenNotAllowed) {
  const std::vector<RankDevice> ranks = {{11, 0, kGpuA}, {11, 1, kGpuB}};
  const DeviceCommChoice unbuilt = ChooseDeviceCommPath(ranks, false);
  EXPECT_EQ(unbuilt.path, DeviceCommPath::kStagedMpi);
  EXPECT_NE(unbuilt.reason.find("no NCCL"), std::string::npos) << unbuilt.reason;
  const DeviceCommChoice mpi = ChooseDeviceCommPath(ranks, true, GpuCommRequest::kMpi);
  EXPECT_EQ(mpi.path, DeviceCommPath::kStagedMpi);
  EXPECT_NE(mpi.reason.find("MPI was asked for"), std::string::npos) << mpi.reason;
}

TEST(ChooseDeviceCommPath, NcclWhenAskedForEvenOnASharedGpu) {
  const std::vector<RankDevice> ranks = {{11, 0, kGpuA}, {11, 0, kGpuA}};
  const DeviceCommChoice choice = ChooseDeviceCommPath(ranks, true, GpuCommRequest::kNccl);
  EXPECT_EQ(choice.path, DeviceCommPath::kNccl);
  EXPECT_NE(choice.reason.find("NCCL_HOSTID"), std::string::npos) << choice.reason;
  EXPECT_EQ(ChooseDeviceCommPath({{5, 3, kGpuC}}, true, GpuCommRequest::kNccl).reason, "asked for");
  ExpectError([&] { ChooseDeviceCommPath(ranks, false, GpuCommRequest::kNccl); }, {"no NCCL"});
}

TEST(ParseGpuCommRequest, NamesTheFlagForBadText) {
  EXPECT_EQ(ParseGpuCommRequest("auto", "--gpu_comm"), GpuCommRequest::kAuto);
  EXPECT_EQ(ParseGpuCommRequest("nccl", "--gpu_comm"), GpuCommRequest::kNccl);
  EXPECT_EQ(ParseGpuCommRequest("mpi", "--gpu_comm"), GpuCommRequest::kMpi);
  ExpectError([] { ParseGpuCommRequest("NCCL2", "--gpu_comm"); }, {"--gpu_comm", "NCCL2"});
}

TEST(ChooseDeviceCommPath, OneRankHasItsOwnGpu) {
  EXPECT_EQ(ChooseDeviceCommPath({{5, 3, kGpuC}}, true).path, DeviceCommPath::kNccl);
}

TEST(HostNameHash, IsStable) { EXPECT_EQ(HostNameHash(), HostNameHash()); }

}  // namespace
}  // namespace doppio
