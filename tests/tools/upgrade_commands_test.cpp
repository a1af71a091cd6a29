// `doppio upgrade_net` and `doppio upgrade_solver` end to end, and old-format files read
// directly by the other commands.
#include <gtest/gtest.h>

#include "cli_test_util.hpp"
#include "doppio/util/io.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

using namespace cli_test;

const char* kV1Net = R"(
name: "old"
input: "x"
input_dim: 2 input_dim: 3 input_dim: 1 input_dim: 1
layers { name: "ip" type: INNER_PRODUCT bottom: "x" top: "y" blobs_lr: 1 blobs_lr: 2
         inner_product_param { num_output: 2 weight_filler { type: "gaussian" std: 0.1 } } }
layers { name: "relu" type: RELU bottom: "y" top: "y" }
)";

class UpgradeCommandsTest : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) const { return dir_.path() + "/" + name; }
  Result Run(const std::vector<std::string>& args) { return RunDoppio(args, Path("log.txt")); }
  TempDir dir_;
};

TEST_F(UpgradeCommandsTest, UpgradeNetWritesLayerBlocks) {
  WriteText(Path("old.prototxt"), kV1Net);
  const Result run = Run({"upgrade_net", Path("old.prototxt"), Path("new.prototxt")});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_CONTAINS(run.output, "upgraded from Caffe's V1 format (2 'layers' blocks)");
  NetParameter upgraded;
  ReadProtoFromTextFile(Path("new.prototxt"), &upgraded);
  EXPECT_EQ(upgraded.layers_size(), 0);
  // As Caffe writes it: the net-level input is a first Input layer.
  EXPECT_EQ(upgraded.input_size() + upgraded.input_dim_size(), 0);
  ASSERT_EQ(upgraded.layer_size(), 3);
  EXPECT_EQ(upgraded.layer(0).type(), "Input");
  EXPECT_EQ(upgraded.layer(0).top(0), "x");
  EXPECT_EQ(upgraded.layer(0).input_param().shape(0).dim(1), 3);
  EXPECT_EQ(upgraded.layer(1).type(), "InnerProduct");
  EXPECT_EQ(upgraded.layer(1).param(1).lr_mult(), 2.f);
  EXPECT_EQ(upgraded.layer(2).type(), "ReLU");
}

TEST_F(UpgradeCommandsTest, UpgradeNetMovesTheInputsOfACurrentNet) {
  WriteText(Path("inputs.prototxt"),
            "input: 'x' input_shape { dim: 2 dim: 3 } "
            "layer { name: 'relu' type: 'ReLU' bottom: 'x' top: 'y' }");
  const Result run = Run({"upgrade_net", Path("inputs.prototxt"), Path("new.prototxt")});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_CONTAINS(run.output, "upgraded the net-level inputs (1) to a first 'Input' layer");
  NetParameter upgraded;
  ReadProtoFromTextFile(Path("new.prototxt"), &upgraded);
  EXPECT_EQ(upgraded.input_size() + upgraded.input_shape_size(), 0);
  ASSERT_EQ(upgraded.layer_size(), 2);
  EXPECT_EQ(upgraded.layer(0).input_param().shape(0).dim(1), 3);
}

TEST_F(UpgradeCommandsTest, UpgradeNetBinaryKeepsWeights) {
  NetParameter old = ParseText<NetParameter>(R"(
    name: "old"
    layers { name: "ip" type: INNER_PRODUCT
             blobs { shape { dim: 1 dim: 2 } data: 0.5 data: -3 }
             blobs { shape { dim: 1 } data: 0.125 } })");
  WriteProtoToBinaryFile(old, Path("old.caffemodel"));
  const Result run =
      Run({"upgrade_net", "--binary", Path("old.caffemodel"), Path("new.caffemodel")});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  NetParameter upgraded;
  ReadProtoFromBinaryFile(Path("new.caffemodel"), &upgraded);
  ASSERT_EQ(upgraded.layer_size(), 1);
  EXPECT_EQ(upgraded.layers_size(), 0);
  ASSERT_EQ(upgraded.layer(0).blobs_size(), 2);
  EXPECT_EQ(upgraded.layer(0).blobs(0).data(1), -3.f);
  EXPECT_EQ(upgraded.layer(0).blobs(1).data(0), 0.125f);
}

TEST_F(UpgradeCommandsTest, UpgradeSolverReplacesSolverType) {
  WriteText(Path("old_solver.prototxt"),
            "net: 'net.prototxt' base_lr: 0.01 solver_type: NESTEROV momentum: 0.9");
  const Result run =
      Run({"upgrade_solver", Path("old_solver.prototxt"), Path("new_solver.prototxt")});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  SolverParameter upgraded;
  ReadProtoFromTextFile(Path("new_solver.prototxt"), &upgraded);
  EXPECT_FALSE(upgraded.has_solver_type());
  EXPECT_EQ(upgraded.type(), "Nesterov");
  EXPECT_EQ(upgraded.net(), "net.prototxt");
}

TEST_F(UpgradeCommandsTest, BadArgumentsAndFilesAreErrors) {
  const Result one = Run({"upgrade_net", Path("old.prototxt")});
  EXPECT_EQ(one.exit_code, 1);
  EXPECT_CONTAINS(one.output, "upgrade_net: give the old net and the file to write");
  const Result missing = Run({"upgrade_solver", Path("none.prototxt"), Path("out.prototxt")});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_CONTAINS(missing.output, Path("none.prototxt") + ": cannot open");
  WriteText(Path("bad.prototxt"), "layers { layer { name: 'c' type: 'conv' dropout_ratio: 1 } }");
  const Result bad = Run({"upgrade_net", Path("bad.prototxt"), Path("out.prototxt")});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_CONTAINS(bad.output, "V0 field 'dropout_ratio' does not apply to a 'conv' layer");
}

TEST_F(UpgradeCommandsTest, TimeReadsAV1NetDirectly) {
  WriteText(Path("old.prototxt"), kV1Net);
  const Result run = Run({"time", "--model=" + Path("old.prototxt"), "--iterations=1"});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_CONTAINS(run.output, Path("old.prototxt") + ": upgraded from Caffe's V1 format");
  EXPECT_CONTAINS(run.output, "Average Forward-Backward:");
}

}  // namespace
}  // namespace doppio
