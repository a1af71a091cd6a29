#include "memory_report.hpp"

#include <gtest/gtest.h>

#include "doppio/util/host_workspace.hpp"
#include "doppio/util/io.hpp"
#include "doppio/util/memory_usage.hpp"

namespace doppio {
namespace {

// x -> ip1 -> ReLU in place -> flatten (aliases h) -> ip2 -> Euclidean loss: the in-place
// and the aliasing blob each use h's buffers.
const char* kNet = R"(
  name: "report"
  state { phase: TRAIN }
  layer { name: "in" type: "Input" top: "x" top: "target"
          input_param { shape { dim: 4 dim: 3 } shape { dim: 4 dim: 1 } } }
  layer { name: "ip1" type: "InnerProduct" bottom: "x" top: "h"
          inner_product_param { num_output: 5 weight_filler { type: "gaussian" std: 0.5 } } }
  layer { name: "relu" type: "ReLU" bottom: "h" top: "h" }
  layer { name: "flat" type: "Flatten" bottom: "h" top: "f" }
  layer { name: "ip2" type: "InnerProduct" bottom: "f" top: "y"
          inner_product_param { num_output: 1 weight_filler { type: "gaussian" std: 0.5 } } }
  layer { name: "loss" type: "EuclideanLoss" bottom: "y" bottom: "target" top: "loss" }
)";

TEST(MemoryReport, NeedsAreTheSumOfTheBlobs) {
  Net<float> net(ReadNetParamsFromTextString(kNet, "test net"));
  net.ForwardBackward();
  // The high-water mark is at least what is resident now (read first: it only grows).
  const std::size_t resident = ReadHostMemoryUsage().resident_bytes;
  const MemoryReport report = MeasureMemory({&net}, nullptr);
  // Data and diff of x (12), target (4), h (20; f shares it), y (4) and loss (1).
  EXPECT_EQ(report.activation_bytes, 2 * sizeof(float) * (12 + 4 + 20 + 4 + 1));
  // ip1: 5x3 weights and 5 biases; ip2: 1x5 weights and 1 bias; data and diff.
  EXPECT_EQ(report.parameter_bytes, 2 * sizeof(float) * (15 + 5 + 5 + 1));
  EXPECT_EQ(report.workspace_bytes, HostWorkspaceBytes());
  EXPECT_EQ(report.needed_bytes(),
            report.parameter_bytes + report.activation_bytes + report.workspace_bytes);
  EXPECT_FALSE(report.device);
  EXPECT_GE(report.peak_bytes, resident);
}

TEST(MemoryReport, TwoNetsAddUp) {
  Net<float> first(ReadNetParamsFromTextString(kNet, "test net"));
  Net<float> second(ReadNetParamsFromTextString(kNet, "test net"));
  const MemoryReport one = MeasureMemory({&first}, nullptr);
  const MemoryReport both = MeasureMemory({&first, &second}, nullptr);
  EXPECT_EQ(both.parameter_bytes, 2 * one.parameter_bytes);
  EXPECT_EQ(both.activation_bytes, 2 * one.activation_bytes);
}

TEST(MemoryReport, LineShowsPeakNeedsAndOverhead) {
  MemoryReport report;
  constexpr std::size_t kMiB = 1 << 20;
  report.parameter_bytes = 400 * kMiB;
  report.activation_bytes = 90 * kMiB;
  report.workspace_bytes = 10 * kMiB + kMiB / 2;
  report.peak_bytes = 650 * kMiB;
  EXPECT_EQ(FormatMemoryReport(report),
            "Peak host memory: 650.0 MiB; the net needs 500.5 MiB (parameters 400.0 MiB, "
            "activations 90.0 MiB, workspace 10.5 MiB), overhead 149.5 MiB");
  report.device = true;
  report.peak_bytes = 450 * kMiB;
  EXPECT_EQ(FormatMemoryReport(report),
            "Peak device memory: 450.0 MiB; the net needs 500.5 MiB (parameters 400.0 MiB, "
            "activations 90.0 MiB, workspace 10.5 MiB), of which 50.5 MiB never touched");
}

}  // namespace
}  // namespace doppio
