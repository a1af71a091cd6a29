#pragma once

#include <memory>
#include <string>
#include <vector>

#include "doppio/data/shard.hpp"
#include "doppio/layers/base_data_layer.hpp"

namespace cv {
class Mat;
}

namespace doppio {

// Caffe's WindowData (R-CNN fine-tuning): samples windows of images listed in a window file
// and warps each to crop_size x crop_size. The window file repeats, for every image,
//   # <image index>
//   <image path>
//   <channels> <height> <width>
//   <number of windows>
//   <class> <overlap> <x1> <y1> <x2> <y2>     (one line a window; corners inclusive)
// A window whose overlap is at least fg_threshold is foreground (its class must be > 0); one
// below bg_threshold is background and gets class 0; the others are never used.
//
// window_data_param: source, root_folder (prefixed to every path), batch_size, fg_threshold,
// bg_threshold, fg_fraction, context_pad (pixels of context around the window, after the
// warp), crop_mode ("warp": the window is stretched to the square; "square": the window's
// shorter side is first widened to its longer), cache_images (every image file read into
// memory at set-up). transform_param (or the deprecated fields of window_data_param):
// crop_size (required), mirror, scale, mean_file (C x H x W with H, W >= crop_size, its
// centre subtracted, as Caffe) or mean_value. Where the context reaches outside the image the
// output is 0, as in Caffe. data_param: shard_rank, shard_size, threads and prefetch (Caffe's
// window_data_param has no field for them).
//
// Sampling: of each global batch of G = batch_size x shard_size samples, int(G * fg_fraction)
// are foreground windows and the rest background, as in Caffe, but the foreground samples are
// spread evenly through the batch (Caffe puts them last): under shard_size ranks each reads
// its block of the global batch, which so holds its share of them to within one sample, and N
// ranks of batch B train what one process of batch N x B trains. Which window a sample takes,
// and its mirroring, are drawn from the layer's seed and the sample's stream position, like
// the other data layers' crops, so they do not depend on ranks, threads, prefetching or a
// resume. As in the other data layers, and unlike
// Caffe's WindowData, the TEST phase never mirrors; scale is transform_param's (Caffe reads
// only window_data_param.scale, which is moved there).
//
// A malformed window file is an Error naming the file and the line; an image that is missing,
// does not decode or has another size than its header says, an Error naming the image and its
// line in the window file.
template <typename Dtype>
class WindowDataLayer : public BasePrefetchingDataLayer<Dtype> {
 public:
  explicit WindowDataLayer(const LayerParameter& param) : BasePrefetchingDataLayer<Dtype>(param) {}
  ~WindowDataLayer() override;
  const char* type() const override { return "WindowData"; }

 protected:
  typename BasePrefetchingDataLayer<Dtype>::ReaderFields Reader() const override;
  std::vector<int> DataLayerSetUp() override;
  void LoadBatch(Batch<Dtype>* batch) override;
  void RestartStreamAt(std::uint64_t position) override;

 private:
  struct Image {
    std::string path;  // with root_folder
    int height, width;
    int line;            // of the path in the window file
    std::string cached;  // the file's bytes, with cache_images
  };
  struct Window {
    int image;
    int label;
    int x1, y1, x2, y2;
  };
  void ReadWindowFile();
  void CheckMean() const;
  cv::Mat LoadImage(int index) const;
  // Writes the window, warped (and mirrored), into out (channels x crop x crop, zeroed).
  void WarpWindow(const cv::Mat& image, const Window& window, bool mirror, Dtype* out) const;
  std::string ImageName(int index) const;

  std::vector<Image> images_;
  std::vector<Window> fg_windows_, bg_windows_;
  int channels_ = 0;
  int crop_size_ = 0;
  int context_pad_ = 0;
  bool square_ = false;
  // Foreground samples in every global batch.
  int num_fg_ = 0;
  std::uint64_t window_seed_ = 0;
  std::unique_ptr<ShardSequence> sequence_;
  std::uint64_t batch_k_ = 0;
  struct Sample {
    const Window* window;
    bool mirror;
  };
  std::vector<Sample> samples_;
};

}  // namespace doppio
