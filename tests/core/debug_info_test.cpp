// Caffe's debug_info (core/debug_info.hpp): the logged magnitudes are the mean absolute
// values of what each layer wrote, worked out by hand on a two-layer net.
#include "doppio/core/debug_info.hpp"

#include <gtest/gtest.h>

#include "doppio/core/net.hpp"
#include "log_capture.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

// x = [1, -2, 3, -4] (2 x 2); ip: y = x W^T + b with W = [[0.5, -1]], b = 0.25;
// loss = Euclidean(y, t) with t = [0, 0].
const char* kNet = R"(
  name: "tiny" debug_info: true force_backward: true
  layer { name: "in" type: "Input" top: "x" top: "t"
          input_param { shape { dim: 2 dim: 2 } shape { dim: 2 dim: 1 } } }
  layer { name: "ip" type: "InnerProduct" bottom: "x" top: "y"
          inner_product_param { num_output: 1 } }
  layer { name: "loss" type: "EuclideanLoss" bottom: "y" bottom: "t" top: "loss" })";

TEST(DebugInfo, LogsMeanAbsoluteValuesOfForwardBackwardAndUpdate) {
  Net<float> net(ParseText<NetParameter>(kNet));
  SetValues(net.blob_by_name("x").get(), {1, -2, 3, -4});
  SetValues(net.blob_by_name("t").get(), {0, 0});
  SetValues(net.layer_by_name("ip")->blobs()[0].get(), {0.5, -1});
  SetValues(net.layer_by_name("ip")->blobs()[1].get(), {0.25});
  LogCapture info(google::INFO);
  net.ForwardBackward();
  // y = [0.5 + 2 + 0.25, 1.5 + 4 + 0.25] = [2.75, 5.75]; loss = (2.75^2 + 5.75^2) / 4.
  // dy = y / 2 = [1.375, 2.875]; dx = dy W = [0.6875, -1.375, 1.4375, -2.875];
  // dW = dy^T x = [1.375 + 8.625, -2.75 - 11.5] = [10, -14.25]; db = 4.25.
  EXPECT_CONTAINS(info.text(), "    [Forward] Layer ip, top blob y data: 4.25\n");
  EXPECT_CONTAINS(info.text(), "    [Forward] Layer ip, param blob 0 data: 0.75\n");
  EXPECT_CONTAINS(info.text(), "    [Forward] Layer ip, param blob 1 data: 0.25\n");
  EXPECT_CONTAINS(info.text(), "    [Forward] Layer loss, top blob loss data: 10.1562\n");
  EXPECT_CONTAINS(info.text(), "    [Backward] Layer loss, bottom blob y diff: 2.125\n");
  EXPECT_CONTAINS(info.text(), "    [Backward] Layer ip, bottom blob x diff: 1.59375\n");
  EXPECT_CONTAINS(info.text(), "    [Backward] Layer ip, param blob 0 diff: 12.125\n");
  EXPECT_CONTAINS(info.text(), "    [Backward] Layer ip, param blob 1 diff: 4.25\n");
  // An Input layer has nothing to propagate to.
  EXPECT_EQ(info.text().find("[Backward] Layer in"), std::string::npos) << info.text();

  info.lines.clear();
  net.Update();
  EXPECT_CONTAINS(info.text(), "    [Update] Layer ip, param 0 data: 0.75; diff: 12.125\n");
  EXPECT_CONTAINS(info.text(), "    [Update] Layer ip, param 1 data: 0.25; diff: 4.25\n");
}

TEST(DebugInfo, OffUnlessAsked) {
  NetParameter param = ParseText<NetParameter>(kNet);
  param.set_debug_info(false);
  Net<float> net(param);
  LogCapture info(google::INFO);
  net.ForwardBackward();
  net.Update();
  EXPECT_EQ(info.text().find("[Forward]"), std::string::npos) << info.text();
  EXPECT_EQ(info.text().find("[Update]"), std::string::npos) << info.text();
}

}  // namespace
}  // namespace doppio
