#include "doppio/util/im2col.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "test_util.hpp"

namespace doppio {

namespace {

struct Geometry {
  int channels, height, width, kernel_h, kernel_w, pad_h, pad_w, stride_h, stride_w, dilation_h,
      dilation_w;
  int out_h() const { return ConvOutputSize(height, kernel_h, pad_h, stride_h, dilation_h); }
  int out_w() const { return ConvOutputSize(width, kernel_w, pad_w, stride_w, dilation_w); }
};

// The definition, one element at a time: col[(c, ki, kj), (oh, ow)] = im[c, ih, iw] or 0.
template <typename Dtype>
std::vector<Dtype> NaiveIm2col(const Geometry& g, const std::vector<Dtype>& im) {
  const int oh_n = g.out_h(), ow_n = g.out_w();
  std::vector<Dtype> col(static_cast<size_t>(g.channels) * g.kernel_h * g.kernel_w * oh_n * ow_n);
  for (int c = 0; c < g.channels; ++c)
    for (int ki = 0; ki < g.kernel_h; ++ki)
      for (int kj = 0; kj < g.kernel_w; ++kj) {
        const int row = (c * g.kernel_h + ki) * g.kernel_w + kj;
        for (int oh = 0; oh < oh_n; ++oh)
          for (int ow = 0; ow < ow_n; ++ow) {
            const int ih = oh * g.stride_h - g.pad_h + ki * g.dilation_h;
            const int iw = ow * g.stride_w - g.pad_w + kj * g.dilation_w;
            Dtype v = 0;
            if (ih >= 0 && ih < g.height && iw >= 0 && iw < g.width) {
              v = im[(c * g.height + ih) * g.width + iw];
            }
            col[(row * oh_n + oh) * ow_n + ow] = v;
          }
      }
  return col;
}

template <typename Dtype>
std::vector<Dtype> NaiveCol2im(const Geometry& g, const std::vector<Dtype>& col) {
  const int oh_n = g.out_h(), ow_n = g.out_w();
  std::vector<Dtype> im(static_cast<size_t>(g.channels) * g.height * g.width, Dtype(0));
  for (int c = 0; c < g.channels; ++c)
    for (int ki = 0; ki < g.kernel_h; ++ki)
      for (int kj = 0; kj < g.kernel_w; ++kj) {
        const int row = (c * g.kernel_h + ki) * g.kernel_w + kj;
        for (int oh = 0; oh < oh_n; ++oh)
          for (int ow = 0; ow < ow_n; ++ow) {
            const int ih = oh * g.stride_h - g.pad_h + ki * g.dilation_h;
            const int iw = ow * g.stride_w - g.pad_w + kj * g.dilation_w;
            if (ih >= 0 && ih < g.height && iw >= 0 && iw < g.width) {
              im[(c * g.height + ih) * g.width + iw] += col[(row * oh_n + oh) * ow_n + ow];
            }
          }
      }
  return im;
}

std::vector<Geometry> Geometries() {
  return {
      {1, 3, 3, 1, 1, 0, 0, 1, 1, 1, 1},    // 1x1
      {2, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1},    // same padding
      {3, 7, 5, 3, 2, 0, 1, 2, 1, 1, 1},    // anisotropic
      {2, 9, 8, 3, 3, 2, 1, 1, 2, 2, 3},    // dilated, strided in w
      {1, 11, 11, 5, 5, 2, 2, 4, 4, 1, 1},  // stride larger than pad
      {2, 4, 4, 2, 2, 3, 3, 3, 2, 1, 1},    // padding larger than half the kernel
      {1, 2, 9, 2, 3, 0, 4, 1, 3, 1, 2},    // padding wider than the image row
      {4, 6, 6, 6, 6, 0, 0, 1, 1, 1, 1},    // kernel covers the whole image
  };
}

}  // namespace

template <typename Dtype>
class Im2colTest : public ::testing::Test {};
TYPED_TEST_SUITE(Im2colTest, TestDtypes);

TYPED_TEST(Im2colTest, MatchesNaiveLoop) {
  Rng rng(7);
  for (const Geometry& g : Geometries()) {
    std::vector<TypeParam> im(static_cast<size_t>(g.channels) * g.height * g.width);
    for (auto& v : im) v = static_cast<TypeParam>(rng.Uniform(-1, 1));
    const std::vector<TypeParam> expected = NaiveIm2col(g, im);
    // Garbage in the output buffer must be overwritten everywhere.
    std::vector<TypeParam> col(expected.size(), TypeParam(123));
    im2col_cpu(im.data(), g.channels, g.height, g.width, g.kernel_h, g.kernel_w, g.pad_h, g.pad_w,
               g.stride_h, g.stride_w, g.dilation_h, g.dilation_w, col.data());
    for (size_t i = 0; i < col.size(); ++i) {
      ASSERT_EQ(expected[i], col[i]) << "element " << i << " of geometry " << g.height << "x"
                                     << g.width << " k" << g.kernel_h << "x" << g.kernel_w;
    }
  }
}

TYPED_TEST(Im2colTest, Col2imMatchesNaiveLoop) {
  Rng rng(11);
  for (const Geometry& g : Geometries()) {
    const size_t col_size =
        static_cast<size_t>(g.channels) * g.kernel_h * g.kernel_w * g.out_h() * g.out_w();
    std::vector<TypeParam> col(col_size);
    for (auto& v : col) v = static_cast<TypeParam>(rng.Uniform(-1, 1));
    const std::vector<TypeParam> expected = NaiveCol2im(g, col);
    std::vector<TypeParam> im(expected.size(), TypeParam(-77));
    col2im_cpu(col.data(), g.channels, g.height, g.width, g.kernel_h, g.kernel_w, g.pad_h, g.pad_w,
               g.stride_h, g.stride_w, g.dilation_h, g.dilation_w, im.data());
    for (size_t i = 0; i < im.size(); ++i) {
      ASSERT_NEAR(expected[i], im[i], 1e-5) << "element " << i;
    }
  }
}

TYPED_TEST(Im2colTest, StridedRowsPlaceImagesSideBySide) {
  // Two images written into one matrix with rows 2 * spatial apart, then read back.
  Rng rng(3);
  const Geometry g = {2, 5, 4, 3, 2, 1, 0, 2, 1, 1, 1};
  const int spatial = g.out_h() * g.out_w();
  const int rows = g.channels * g.kernel_h * g.kernel_w;
  const int plane = g.channels * g.height * g.width;
  std::vector<TypeParam> ims(2 * plane);
  for (auto& v : ims) v = static_cast<TypeParam>(rng.Uniform(-1, 1));
  std::vector<TypeParam> wide(2 * rows * spatial, TypeParam(5));
  for (int b = 0; b < 2; ++b) {
    im2col_cpu(ims.data() + b * plane, g.channels, g.height, g.width, g.kernel_h, g.kernel_w,
               g.pad_h, g.pad_w, g.stride_h, g.stride_w, g.dilation_h, g.dilation_w,
               wide.data() + b * spatial, 2 * spatial);
  }
  for (int b = 0; b < 2; ++b) {
    const std::vector<TypeParam> im(ims.begin() + b * plane, ims.begin() + (b + 1) * plane);
    const std::vector<TypeParam> expected = NaiveIm2col(g, im);
    for (int r = 0; r < rows; ++r)
      for (int s = 0; s < spatial; ++s)
        ASSERT_EQ(expected[r * spatial + s], wide[r * 2 * spatial + b * spatial + s]);
    std::vector<TypeParam> back(plane);
    col2im_cpu(wide.data() + b * spatial, g.channels, g.height, g.width, g.kernel_h, g.kernel_w,
               g.pad_h, g.pad_w, g.stride_h, g.stride_w, g.dilation_h, g.dilation_w, back.data(),
               2 * spatial);
    const std::vector<TypeParam> expected_back = NaiveCol2im(g, expected);
    for (int i = 0; i < plane; ++i) ASSERT_NEAR(expected_back[i], back[i], 1e-5);
  }
}

TYPED_TEST(Im2colTest, ClobberingCol2imGivesCol2imsBits) {
  // The geometries above, plus stride-1 ones that keep the width (the long-loop path), each
  // dense and with rows twice as far apart (images side by side).
  std::vector<Geometry> geometries = Geometries();
  geometries.push_back({3, 6, 7, 3, 3, 2, 2, 1, 1, 2, 2});  // dilated, same width
  geometries.push_back({2, 5, 4, 5, 3, 0, 1, 1, 1, 1, 1});  // tall kernel, same width
  Rng rng(5);
  for (const Geometry& g : geometries) {
    const int spatial = g.out_h() * g.out_w();
    const size_t rows = static_cast<size_t>(g.channels) * g.kernel_h * g.kernel_w;
    for (int stride : {spatial, 2 * spatial}) {
      std::vector<TypeParam> col(rows * stride);
      for (auto& v : col) v = static_cast<TypeParam>(rng.Uniform(-1, 1));
      std::vector<TypeParam> expected(static_cast<size_t>(g.channels) * g.height * g.width);
      std::vector<TypeParam> im(expected.size(), TypeParam(-77));
      col2im_cpu(col.data(), g.channels, g.height, g.width, g.kernel_h, g.kernel_w, g.pad_h,
                 g.pad_w, g.stride_h, g.stride_w, g.dilation_h, g.dilation_w, expected.data(),
                 stride);
      col2im_cpu_clobbering(col.data(), g.channels, g.height, g.width, g.kernel_h, g.kernel_w,
                            g.pad_h, g.pad_w, g.stride_h, g.stride_w, g.dilation_h, g.dilation_w,
                            im.data(), stride);
      ASSERT_EQ(expected, im) << "geometry " << g.height << "x" << g.width << " k" << g.kernel_h
                              << "x" << g.kernel_w << ", column rows " << stride << " apart";
    }
  }
}

TYPED_TEST(Im2colTest, SmallHandWorkedCase) {
  // 1 channel 3x3 image, 2x2 kernel, stride 1, pad 0: 4 output positions.
  const std::vector<TypeParam> im = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<TypeParam> col(16);
  im2col_cpu(im.data(), 1, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1, col.data());
  const std::vector<TypeParam> expected = {1, 2, 4, 5, 2, 3, 5, 6, 4, 5, 7, 8, 5, 6, 8, 9};
  for (int i = 0; i < 16; ++i) EXPECT_EQ(expected[i], col[i]) << i;
  // col2im of all ones counts how many windows cover each pixel.
  std::vector<TypeParam> ones(16, 1), counts(9);
  col2im_cpu(ones.data(), 1, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1, counts.data());
  const std::vector<TypeParam> expected_counts = {1, 2, 1, 2, 4, 2, 1, 2, 1};
  for (int i = 0; i < 9; ++i) EXPECT_EQ(expected_counts[i], counts[i]) << i;
}

}  // namespace doppio
