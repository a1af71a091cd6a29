// Helper of the cluster tests (tests/cluster/cluster_test.py):
//
//   doppio_cluster_helper make-data DIR TRAIN TEST [CHANNELS HEIGHT WIDTH]
//       DIR/train_lmdb and DIR/test_lmdb: TRAIN and TEST generated images (MNIST-sized,
//       1 x 28 x 28, unless a shape is given; labels 0..9), the same bytes on every run.
//       bench/cluster_scaling.py uses it too.
//   doppio_cluster_helper compare A.caffemodel B.caffemodel [RTOL [ATOL]]
//       Compares the parameter blobs of two weight files layer by layer; exit 0 when every
//       value agrees within ATOL + RTOL * |b| (defaults 2e-4 and 2e-5), 1 when some do not,
//       2 when the files do not hold the same layers and shapes.
#include <glog/logging.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "doppio/core/common.hpp"
#include "doppio/data/convert.hpp"
#include "doppio/data/db.hpp"
#include "doppio/util/io.hpp"

namespace doppio {
namespace {

// A small deterministic generator, so that the data does not depend on the C++ library.
class Lcg {
 public:
  explicit Lcg(std::uint64_t seed)
      : state_(seed * 6364136223846793005ULL + 1442695040888963407ULL) {}
  std::uint32_t Next() {
    state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<std::uint32_t>(state_ >> 33);
  }

 private:
  std::uint64_t state_;
};

// Class k: a bright bar (a fifth of the height, most of the width) whose row and slant depend
// on k, over faint noise, so that LeNet's loss falls within a few iterations and every
// rank's batch differs.
struct Shape {
  int channels = 1, height = 28, width = 28;
};

Datum Image(int index, const Shape& shape, Lcg* rng) {
  const int label = static_cast<int>(rng->Next() % 10);
  const int height = shape.height, width = shape.width;
  Datum datum;
  datum.set_channels(shape.channels);
  datum.set_height(height);
  datum.set_width(width);
  datum.set_label(label);
  std::string pixels(static_cast<std::size_t>(shape.channels) * height * width, '\0');
  const int bar = std::max(1, height / 7);
  const int row = height / 10 + label * (height - 2 * bar) / 12;
  const int shift = static_cast<int>(rng->Next() % 5) - 2;
  for (int c = 0; c < shape.channels; ++c) {
    for (int h = 0; h < height; ++h) {
      for (int w = 0; w < width; ++w) {
        int value = static_cast<int>(rng->Next() % 48);
        const int bar_row = row + shift + (label % 3 == 0 ? (w - width / 2) * 2 / width : 0);
        if (h >= bar_row && h < bar_row + bar && w >= width / 7 && w < width - width / 7) {
          value = 200 + (index + w + c) % 56;
        }
        pixels[(static_cast<std::size_t>(c) * height + h) * width + w] = static_cast<char>(value);
      }
    }
  }
  datum.set_data(pixels);
  return datum;
}

void MakeSet(const std::string& path, int count, const Shape& shape, std::uint64_t seed) {
  const std::size_t bytes = std::size_t(count) * shape.channels * shape.height * shape.width;
  auto db = db::OpenLMDB(path, db::Mode::kNew, std::max(std::size_t(64) << 20, 2 * bytes));
  auto txn = db->NewTransaction();
  Lcg rng(seed);
  for (int i = 0; i < count; ++i) {
    txn->Put(FormatKey(i, 8), Image(i, shape, &rng).SerializeAsString());
  }
  txn->Commit();
}

int MakeData(const std::string& dir, int train, int test, const Shape& shape) {
  DOPPIO_ENSURE(train > 0 && test > 0) << "make-data: the record counts must be positive";
  DOPPIO_ENSURE(shape.channels > 0 && shape.height >= 7 && shape.width >= 7 &&
                shape.channels * shape.height * shape.width <= (1 << 24))
      << "make-data: the shape " << shape.channels << " x " << shape.height << " x " << shape.width
      << " is out of range";
  std::filesystem::create_directories(dir);
  MakeSet(dir + "/train_lmdb", train, shape, 1);
  MakeSet(dir + "/test_lmdb", test, shape, 2);
  std::cout << "make-data: " << train << " training and " << test << " test records of "
            << shape.channels << " x " << shape.height << " x " << shape.width << " in " << dir
            << "\n";
  return 0;
}

int Compare(const std::string& a_path, const std::string& b_path, double rtol, double atol) {
  NetParameter a, b;
  ReadProtoFromBinaryFile(a_path, &a);
  ReadProtoFromBinaryFile(b_path, &b);
  std::map<std::string, const LayerParameter*> b_layers;
  for (const LayerParameter& layer : b.layer()) {
    if (layer.blobs_size() > 0) b_layers[layer.name()] = &layer;
  }
  int compared_layers = 0;
  std::size_t values = 0, bad = 0;
  double worst = 0, worst_ratio = 0;
  std::string worst_where;
  for (const LayerParameter& layer : a.layer()) {
    if (layer.blobs_size() == 0) continue;
    auto found = b_layers.find(layer.name());
    if (found == b_layers.end()) {
      std::cout << "compare: layer '" << layer.name() << "' has weights in " << a_path
                << " but not in " << b_path << "\n";
      return 2;
    }
    const LayerParameter& other = *found->second;
    b_layers.erase(found);
    if (other.blobs_size() != layer.blobs_size()) {
      std::cout << "compare: layer '" << layer.name() << "' has " << layer.blobs_size()
                << " blobs in " << a_path << " and " << other.blobs_size() << " in " << b_path
                << "\n";
      return 2;
    }
    ++compared_layers;
    for (int k = 0; k < layer.blobs_size(); ++k) {
      const BlobProto& x = layer.blobs(k);
      const BlobProto& y = other.blobs(k);
      if (x.data_size() != y.data_size() || x.data_size() == 0) {
        std::cout << "compare: layer '" << layer.name() << "' blob " << k << ": " << x.data_size()
                  << " vs " << y.data_size() << " float values\n";
        return 2;
      }
      double blob_worst = 0;
      for (int i = 0; i < x.data_size(); ++i) {
        const double diff = std::fabs(double(x.data(i)) - double(y.data(i)));
        const double allowed = atol + rtol * std::fabs(double(y.data(i)));
        blob_worst = std::max(blob_worst, diff);
        if (!(diff <= allowed)) ++bad;
        if (diff / allowed > worst_ratio || std::isnan(diff)) {
          worst_ratio = std::isnan(diff) ? INFINITY : diff / allowed;
          worst = diff;
          worst_where = layer.name() + " blob " + std::to_string(k) + " [" + std::to_string(i) +
                        "]: " + std::to_string(x.data(i)) + " vs " + std::to_string(y.data(i));
        }
      }
      values += x.data_size();
      std::printf("compare: %-10s blob %d: %7d values, max |a-b| %.3g\n", layer.name().c_str(), k,
                  x.data_size(), blob_worst);
    }
  }
  if (!b_layers.empty()) {
    std::cout << "compare: layer '" << b_layers.begin()->first << "' has weights in " << b_path
              << " but not in " << a_path << "\n";
    return 2;
  }
  if (compared_layers == 0) {
    std::cout << "compare: no layer with weights in " << a_path << "\n";
    return 2;
  }
  std::cout << "compare: " << values << " values in " << compared_layers << " layers; " << bad
            << " outside " << atol << " + " << rtol << " * |b|; largest (relative to the "
            << "tolerance) " << worst_where << " (|a-b| " << worst << ")\n";
  return bad == 0 ? 0 : 1;
}

int Main(int argc, char** argv) {
  const std::string command = argc > 1 ? argv[1] : "";
  if (command == "make-data" && (argc == 5 || argc == 8)) {
    Shape shape;
    if (argc == 8) shape = {std::atoi(argv[5]), std::atoi(argv[6]), std::atoi(argv[7])};
    return MakeData(argv[2], std::atoi(argv[3]), std::atoi(argv[4]), shape);
  }
  if (command == "compare" && argc >= 4 && argc <= 6) {
    const double rtol = argc > 4 ? std::atof(argv[4]) : 2e-4;
    const double atol = argc > 5 ? std::atof(argv[5]) : 2e-5;
    return Compare(argv[2], argv[3], rtol, atol);
  }
  std::cerr << "usage: doppio_cluster_helper make-data DIR TRAIN TEST [CHANNELS HEIGHT WIDTH]\n"
               "       doppio_cluster_helper compare A.caffemodel B.caffemodel [RTOL [ATOL]]\n";
  return 2;
}

}  // namespace
}  // namespace doppio

int main(int argc, char** argv) {
  google::InitGoogleLogging(argv[0]);
  try {
    return doppio::Main(argc, argv);
  } catch (const std::exception& error) {
    std::cerr << "doppio_cluster_helper: " << error.what() << "\n";
    return 2;
  }
}
