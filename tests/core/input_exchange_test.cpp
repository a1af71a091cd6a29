// The input exchange the net performs for a layer that keeps its input for Backward
// (core/input_exchange.hpp): when it exchanges, when it refuses, and what it counts.
#include "doppio/core/input_exchange.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "doppio/core/layer_registry.hpp"
#include "doppio/core/net.hpp"
#include "doppio/util/io.hpp"

namespace doppio {
namespace {

// In place on one blob: doubles it, and keeps its input for Backward, which reads it to
// give the bottom diff the input's values (so that a stale kept input shows).
class KeepInputLayer : public Layer<float>, public InputExchange<float> {
 public:
  explicit KeepInputLayer(const LayerParameter& param) : Layer<float>(param) {}
  static bool& wants() {
    static bool wants = true;
    return wants;
  }
  InputExchange<float>* input_exchange() override { return this; }

 protected:
  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    top[0]->ReshapeLike(*bottom[0]);
    SizeKept(bottom[0]->count() * sizeof(float));
  }
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const int count = bottom[0]->count();
    float* input = static_cast<float*>(kept()->mutable_cpu_data());
    if (!TakeExchanged()) std::copy_n(bottom[0]->cpu_data(), count, input);
    float* y = top[0]->mutable_cpu_data();
    for (int i = 0; i < count; ++i) y[i] = 2 * input[i];
  }
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    const auto* input = static_cast<const float*>(kept()->cpu_data());
    std::copy_n(input, bottom[0]->count(), bottom[0]->mutable_cpu_diff());
  }
  bool WantsExchange(const SyncedMemory&) const override { return wants(); }
};

const LayerRegisterer<float> g_keep_input(
    "TestKeepInput", [](const LayerParameter& p) { return std::make_shared<KeepInputLayer>(p); },
    LayerTraits());

// An input of 4 values, the keeping layer in place on it, and, with `split`, a second reader
// of its output (the net inserts a Split, whose tops share the blob's buffer).
std::unique_ptr<Net<float>> KeepingNet(bool split) {
  std::string text =
      "force_backward: true "
      "layer { name: 'in' type: 'Input' top: 'x' input_param { shape { dim: 4 } } } "
      "layer { name: 'keep' type: 'TestKeepInput' bottom: 'x' top: 'x' } "
      "layer { name: 'a' type: 'Power' bottom: 'x' top: 'a' } ";
  if (split) text += "layer { name: 'b' type: 'Power' bottom: 'x' top: 'b' } ";
  auto net = std::make_unique<Net<float>>(ReadNetParamsFromTextString(text, "net"));
  return net;
}

void Fill(Blob<float>* blob, float first) {
  float* x = blob->mutable_cpu_data();
  for (int i = 0; i < blob->count(); ++i) x[i] = first + i;
}

KeepInputLayer& Keeper(const Net<float>& net) {
  return dynamic_cast<KeepInputLayer&>(*net.layer_by_name("keep"));
}

TEST(InputExchangeTest, TheNetExchangesTheBlobsBufferBeforeEachForward) {
  KeepInputLayer::wants() = true;
  auto net = KeepingNet(false);
  Blob<float>& x = *net->blob_by_name("x");
  for (int pass = 1; pass <= 3; ++pass) {
    Fill(&x, 10.f * pass);
    const std::uint64_t generation = x.data_generation();
    const SyncedMemory* input = x.data().get();  // not held: the net exchanges no shared buffer
    net->Forward();
    EXPECT_EQ(x.data_generation(), generation + 1) << pass;
    EXPECT_EQ(Keeper(*net).exchanges(), static_cast<std::uint64_t>(pass));
    // The input's buffer is the kept one now, the blob holds the output.
    EXPECT_EQ(Keeper(*net).kept().get(), input);
    EXPECT_EQ(x.cpu_data()[3], 2 * (10.f * pass + 3)) << pass;
    net->Backward();
    EXPECT_EQ(x.cpu_diff()[3], 10.f * pass + 3) << pass;
  }
}

// Where the net does not exchange, the layer copies its input: the same output and diff.
void ExpectCopied(bool split, bool wants) {
  KeepInputLayer::wants() = wants;
  auto net = KeepingNet(split);
  Blob<float>& x = *net->blob_by_name("x");
  Fill(&x, 1.f);
  const std::uint64_t generation = x.data_generation();
  net->Forward();
  EXPECT_EQ(x.data_generation(), generation);
  EXPECT_EQ(Keeper(*net).exchanges(), 0u);
  EXPECT_EQ(net->blob_by_name("a")->cpu_data()[2], 2 * 3.f);
  net->Backward();
  EXPECT_EQ(x.cpu_diff()[2], 3.f);
  KeepInputLayer::wants() = true;
}

TEST(InputExchangeTest, ABufferAnotherBlobSharesIsCopied) {
  // A Split's tops share the blob's buffer and would read the input: no exchange.
  ExpectCopied(/*split=*/true, /*wants=*/true);
}

TEST(InputExchangeTest, ALayerThatDoesNotWantItCopies) {
  ExpectCopied(/*split=*/false, /*wants=*/false);
}

TEST(InputExchangeTest, AForwardTheNetDidNotPrepareCopies) {
  // After an exchange, the layer run on its own (not through the net) copies its input.
  KeepInputLayer::wants() = true;
  auto net = KeepingNet(false);
  Blob<float>& x = *net->blob_by_name("x");
  Fill(&x, 1.f);
  net->Forward();
  Fill(&x, 5.f);
  net->layer_by_name("keep")->Forward({&x}, {&x});
  EXPECT_EQ(x.cpu_data()[0], 2 * 5.f);
}

TEST(InputExchangeTest, BlobDataGenerationCountsEveryNewBuffer) {
  Blob<float> blob({2});
  const std::uint64_t start = blob.data_generation();
  blob.Reshape({1});
  EXPECT_EQ(blob.data_generation(), start);  // shrinking keeps the buffer
  blob.Reshape({8});
  EXPECT_EQ(blob.data_generation(), start + 1);
  Blob<float> other({8});
  blob.ShareData(other);
  EXPECT_EQ(blob.data_generation(), start + 2);
  auto memory = std::make_shared<SyncedMemory>(8 * sizeof(float));
  blob.ExchangeData(&memory);
  EXPECT_EQ(blob.data_generation(), start + 3);
  EXPECT_EQ(memory, other.data());
}

}  // namespace
}  // namespace doppio
