// Data pipeline throughput: records per second through LMDB read + decode + transform (the
// Data layer's prefetch thread and its decoding threads), for MNIST-sized raw records,
// 256 x 256 JPEG records (crop 227) and full-size ImageNet-like JPEGs (random-resized crop to
// 224), with 1 and 2 decoding threads, each JPEG case through the libjpeg-turbo decoder and
// through OpenCV's imdecode, and the full-size case also through Pillow + numpy
// (bench/pillow_resized_crop.py) on the same images. Prints a table and the ratios. Then the
// prefetch depth: the full-size case against a consumer whose step takes as long as a batch's
// fill on average, give or take half (a GPU training step that leaves the cores to the input),
// for each depth of --prefetch_depths.
//
//   build/bench/bench_data_pipeline [--mnist_records=N] [--jpeg_records=N] [--full_records=N]
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "doppio/core/blob.hpp"
#include "doppio/data/convert.hpp"
#include "doppio/data/db.hpp"
#include "doppio/layers/data_layer.hpp"
#include "doppio/util/io.hpp"

DEFINE_int32(seconds_per_case, 2, "Rough seconds spent timing each configuration");
DEFINE_int32(repeats, 3, "Timed runs per configuration; the best is kept");
DEFINE_int32(mnist_records, 20000, "Records in the generated MNIST-sized LMDB");
DEFINE_int32(jpeg_records, 400, "Records in the generated 256x256 JPEG LMDB");
DEFINE_int32(full_records, 300, "Records in the generated full-size (about 500x375) JPEG LMDB");
DEFINE_string(python, "/usr/bin/python3", "Python with Pillow and numpy; empty: no Pillow case");
DEFINE_string(threads, "1,2", "Decoding thread counts to compare");
DEFINE_string(prefetch_depths, "1,2,4,8", "data_param.prefetch depths to compare; empty: none");

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// MNIST-like: 1 x 28 x 28 raw bytes, a blob of ink on black.
void MakeMnist(const std::string& path, int n) {
  auto db = doppio::db::OpenLMDB(path, doppio::db::Mode::kNew);
  auto txn = db->NewTransaction();
  cv::RNG rng(1);
  doppio::Datum datum;
  datum.set_channels(1);
  datum.set_height(28);
  datum.set_width(28);
  std::string buffer;
  for (int i = 0; i < n; ++i) {
    cv::Mat image = cv::Mat::zeros(28, 28, CV_8UC1);
    cv::circle(image, cv::Point(rng.uniform(8, 20), rng.uniform(8, 20)), rng.uniform(3, 8),
               cv::Scalar(255), 3);
    datum.set_data(image.data, 28 * 28);
    datum.set_label(i % 10);
    datum.SerializeToString(&buffer);
    txn->Put(doppio::FormatKey(i, 8), buffer);
    if (i % 1000 == 999) txn->Commit();
  }
  txn->Commit();
}

// Photograph-like colour JPEGs (smooth shapes plus noise, quality 90): 256 x 256 with
// `full_size` false; else of ImageNet's common sizes, landscape and portrait. With `folder`,
// each JPEG is also written there as a file, for the Pillow case.
void MakeJpeg(const std::string& path, int n, bool full_size, const std::string& folder = "") {
  auto db = doppio::db::OpenLMDB(path, doppio::db::Mode::kNew);
  auto txn = db->NewTransaction();
  cv::RNG rng(2);
  doppio::Datum datum;
  std::string buffer;
  std::vector<unsigned char> jpeg;
  const cv::Size kFullSizes[] = {{500, 375}, {500, 333}, {375, 500}, {500, 400}, {400, 300}};
  for (int i = 0; i < n; ++i) {
    const cv::Size size = full_size ? kFullSizes[i % 5] : cv::Size(256, 256);
    cv::Mat image(size, CV_8UC3);
    for (int y = 0; y < size.height; ++y) {
      for (int x = 0; x < size.width; ++x) {
        image.at<cv::Vec3b>(y, x) = cv::Vec3b((x + i) % 256, (y * 2) % 256, (x + y) / 2 % 256);
      }
    }
    for (int s = 0; s < 12; ++s) {
      cv::circle(image, cv::Point(rng.uniform(0, size.width), rng.uniform(0, size.height)),
                 rng.uniform(5, size.width / 4),
                 cv::Scalar(rng.uniform(0, 256), rng.uniform(0, 256), rng.uniform(0, 256)), -1);
    }
    cv::Mat noise(size, CV_8UC3);
    rng.fill(noise, cv::RNG::NORMAL, 0, 12);
    image += noise;
    cv::imencode(".jpg", image, jpeg, {cv::IMWRITE_JPEG_QUALITY, 90});
    if (!folder.empty()) {
      std::FILE* file = std::fopen((folder + "/" + doppio::FormatKey(i, 8) + ".jpg").c_str(), "wb");
      CHECK(file != nullptr) << "cannot write in " << folder;
      std::fwrite(jpeg.data(), 1, jpeg.size(), file);
      std::fclose(file);
    }
    datum.set_encoded(true);
    datum.set_data(jpeg.data(), jpeg.size());
    datum.set_label(i % 1000);
    datum.SerializeToString(&buffer);
    txn->Put(doppio::FormatKey(i, 8), buffer);
    if (i % 100 == 99) txn->Commit();
  }
  txn->Commit();
}

struct Result {
  double records_per_second;
  double ms_per_batch;
};

std::vector<int> IntList(const std::string& text) {
  std::vector<int> values;
  for (std::size_t start = 0; start < text.size();) {
    const std::size_t comma = text.find(',', start);
    values.push_back(std::stoi(text.substr(start, comma - start)));
    start = comma == std::string::npos ? text.size() : comma + 1;
  }
  return values;
}

// The records/s the consumer gets. step_ms > 0: after each batch the consumer sleeps
// step_ms times a factor cycling through 0.5 .. 1.5 (mean 1), as a training step would.
Result Time(const std::string& source, int batch, int threads, const std::string& transform,
            int prefetch = 4, double step_ms = 0) {
  const std::string text = "name: 'data' type: 'Data' phase: TRAIN transform_param { " + transform +
                           " } data_param { source: '" + source +
                           "' backend: LMDB batch_size: " + std::to_string(batch) +
                           " prefetch: " + std::to_string(prefetch) +
                           " threads: " + std::to_string(threads) + " }";
  doppio::LayerParameter param;
  doppio::ReadProtoFromTextString(text, "bench", &param);
  doppio::DataLayer<float> layer(param);
  doppio::Blob<float> data, label;
  std::vector<doppio::Blob<float>*> top = {&data, &label};
  layer.SetUp({}, top);
  // Untimed batches, which also size the timed runs.
  auto start = Clock::now();
  int warm = 0;
  while (warm < 3 || std::chrono::duration<double>(Clock::now() - start).count() < 0.2) {
    layer.Forward({}, top);
    ++warm;
  }
  const double per_batch = std::chrono::duration<double>(Clock::now() - start).count() / warm;
  const int batches = std::max(
      5, static_cast<int>(FLAGS_seconds_per_case / per_batch / std::max(1, FLAGS_repeats)));
  Result best{0, 0};
  for (int repeat = 0; repeat < FLAGS_repeats; ++repeat) {
    // Without a step the consumer takes batches as fast as they come: the producer's rate.
    static const double kJitter[] = {0.5, 1.5, 0.75, 1.25, 1.0, 0.6, 1.4, 1.0};
    start = Clock::now();
    for (int i = 0; i < batches; ++i) {
      layer.Forward({}, top);
      if (step_ms > 0) {
        std::this_thread::sleep_for(
            std::chrono::duration<double, std::milli>(step_ms * kJitter[i % 8]));
      }
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const double rate = batches * batch / seconds;
    if (rate > best.records_per_second) best = {rate, 1000 * seconds / batches};
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  FLAGS_minloglevel = google::WARNING;
  FLAGS_logtostderr = true;
  cv::setNumThreads(1);  // only the pipeline's own threads

  const fs::path work =
      fs::temp_directory_path() / ("doppio_bench_data_" + std::to_string(getpid()));
  fs::create_directories(work);
  const std::vector<int> thread_counts = IntList(FLAGS_threads);
  std::printf("generating %d MNIST-sized records, %d 256x256 and %d full-size JPEG records...\n",
              FLAGS_mnist_records, FLAGS_jpeg_records, FLAGS_full_records);
  MakeMnist((work / "mnist").string(), FLAGS_mnist_records);
  MakeJpeg((work / "jpeg").string(), FLAGS_jpeg_records, false);
  fs::create_directories(work / "full_files");
  MakeJpeg((work / "full").string(), FLAGS_full_records, true, (work / "full_files").string());

  const std::string crop =
      "crop_size: 227 mirror: true mean_value: 104 mean_value: 117 "
      "mean_value: 123";
  const std::string resized =
      "resized_crop_size: 224 mirror: true mean_value: 104 "
      "mean_value: 117 mean_value: 123";
  struct Case {
    std::string name, source, transform;
    int batch;
    // The case this one is compared with (its row in the table), or -1.
    int baseline;
  };
  const std::vector<Case> cases = {
      {"MNIST 1x28x28 raw, scale", (work / "mnist").string(), "scale: 0.00390625", 64, -1},
      {"256x256 crop 227, OpenCV", (work / "jpeg").string(), crop + " decoder: OPENCV", 32, -1},
      {"256x256 crop 227, libjpeg-turbo", (work / "jpeg").string(), crop, 32, 1},
      {"full-size resized crop 224, OpenCV", (work / "full").string(), resized + " decoder: OPENCV",
       32, -1},
      {"full-size resized crop 224, libjpeg-turbo", (work / "full").string(), resized, 32, 3},
  };
  std::printf("\n%-44s %8s %6s %12s %10s %10s\n", "records", "threads", "batch", "records/s",
              "ms/batch", "ratio");
  std::vector<std::vector<double>> rates(cases.size());
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const Case& c = cases[k];
    for (std::size_t t = 0; t < thread_counts.size(); ++t) {
      const Result r = Time(c.source, c.batch, thread_counts[t], c.transform);
      rates[k].push_back(r.records_per_second);
      std::string ratio;
      if (c.baseline >= 0) {
        ratio = std::to_string(r.records_per_second / rates[c.baseline][t]).substr(0, 4) + "x";
      } else if (t > 0) {
        ratio = std::to_string(r.records_per_second / rates[k][0]).substr(0, 4) + "x/1t";
      }
      std::printf("%-44s %8d %6d %12.0f %10.2f %10s\n", c.name.c_str(), thread_counts[t], c.batch,
                  r.records_per_second, r.ms_per_batch, ratio.c_str());
    }
  }
  std::printf("\nsecond thread (records/s at %d threads over 1):\n",
              thread_counts.size() > 1 ? thread_counts[1] : 1);
  for (std::size_t k = 1; k < cases.size() && thread_counts.size() > 1; ++k) {
    std::printf("  %-44s %.2fx\n", cases[k].name.c_str(), rates[k][1] / rates[k][0]);
  }
  if (!FLAGS_python.empty()) {
    // The same images, random-resized crop, mirror and mean, in one Python thread.
    const fs::path script = fs::path(DOPPIO_SOURCE_DIR) / "bench" / "pillow_resized_crop.py";
    const std::string command = FLAGS_python + " " + script.string() + " " +
                                (work / "full_files").string() + " --seconds " +
                                std::to_string(FLAGS_seconds_per_case) + " --repeats " +
                                std::to_string(FLAGS_repeats);
    std::FILE* pipe = popen(command.c_str(), "r");
    double pillow = 0;
    if (pipe == nullptr || std::fscanf(pipe, "%lf", &pillow) != 1 || pclose(pipe) != 0) {
      std::printf("\nPillow case failed: %s\n", command.c_str());
    } else {
      std::printf("\n%-44s %8d %6s %12.0f\n", "full-size resized crop 224, Pillow + numpy", 1, "",
                  pillow);
      std::printf("libjpeg-turbo over Pillow + numpy, 1 thread: %.2fx\n", rates[4][0] / pillow);
    }
  }
  const std::vector<int> depths = IntList(FLAGS_prefetch_depths);
  if (!depths.empty()) {
    const Case& c = cases[4];
    const Result alone = Time(c.source, c.batch, 1, c.transform);
    std::printf("\nprefetch depth: %s, 1 thread, a step of %.1f ms (the fill's) +-50%%\n",
                c.name.c_str(), alone.ms_per_batch);
    for (int depth : depths) {
      const Result r = Time(c.source, c.batch, 1, c.transform, depth, alone.ms_per_batch);
      std::printf("  prefetch %3d: %8.0f records/s, %.2fx the fill's rate alone\n", depth,
                  r.records_per_second, r.records_per_second / alone.records_per_second);
    }
  }
  std::error_code ignored;
  fs::remove_all(work, ignored);
  return 0;
}
