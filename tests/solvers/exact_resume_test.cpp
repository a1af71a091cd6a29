// Exact resume: a run interrupted by a snapshot and resumed from it reaches the weights of
// the uninterrupted run bit for bit, with random crops (random-resized ones of JPEG records
// too), mirrors, dropout and a shuffled image list on, across epoch boundaries, while the prefetch
// threads have read ahead. The data position in the .solverstate makes it so; a state without one
// (Caffe's) resumes with a warning that the data starts over.
#include <glog/logging.h>
#include <gtest/gtest.h>

#include <fstream>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "doppio/data/convert.hpp"
#include "doppio/data/db.hpp"
#include "doppio/data/image_io.hpp"
#include "doppio/util/hdf5.hpp"
#include "doppio/util/io.hpp"
#include "doppio/util/snapshot_files.hpp"
#include "log_capture.hpp"
#include "solver_test_util.hpp"

namespace doppio {
namespace {

using solver_test::Weights;

constexpr int kRecords = 10;  // batch 4: every few iterations cross an epoch boundary
constexpr int kBefore = 3, kTotal = 8;

// Record i: a 6 x 6 gray picture of class i % 3.
int Pixel(int i, int h, int w) { return (37 * i + 11 * h + 5 * w + (h == i % 3 ? 120 : 0)) % 256; }

// The layers after the data: a convolution, Dropout, and a softmax loss over 3 classes.
const char* const kBody = R"(
layer { name: 'conv' type: 'Convolution' bottom: 'data' top: 'conv'
  convolution_param { num_output: 2 kernel_size: 3
    weight_filler { type: 'gaussian' std: 0.2 } bias_filler { type: 'constant' value: 0.1 } } }
layer { name: 'relu' type: 'ReLU' bottom: 'conv' top: 'conv' }
layer { name: 'ip1' type: 'InnerProduct' bottom: 'conv' top: 'ip1'
  inner_product_param { num_output: 8 weight_filler { type: 'gaussian' std: 0.2 } } }
layer { name: 'drop' type: 'Dropout' bottom: 'ip1' top: 'ip1' dropout_param { dropout_ratio: 0.5 } }
layer { name: 'ip2' type: 'InnerProduct' bottom: 'ip1' top: 'ip2'
  inner_product_param { num_output: 3 weight_filler { type: 'gaussian' std: 0.2 } } }
layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip2' bottom: 'label' top: 'loss' }
)";

class ExactResumeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = db::OpenLMDB(dir_.path() + "/lmdb", db::Mode::kNew);
    auto txn = db->NewTransaction();
    auto jpeg_db = db::OpenLMDB(dir_.path() + "/jpeg_lmdb", db::Mode::kNew);
    auto jpeg_txn = jpeg_db->NewTransaction();
    std::ofstream list(dir_.path() + "/list.txt");
    for (int i = 0; i < kRecords; ++i) {
      cv::Mat image(6, 6, CV_8UC1);
      for (int h = 0; h < 6; ++h)
        for (int w = 0; w < 6; ++w) image.at<unsigned char>(h, w) = Pixel(i, h, w);
      Datum datum;
      MatToDatum(image, &datum);
      datum.set_label(i % 3);
      txn->Put(FormatKey(i, 8), datum.SerializeAsString());
      std::vector<unsigned char> jpeg;
      ASSERT_TRUE(cv::imencode(".jpg", image, jpeg));
      datum.Clear();
      datum.set_encoded(true);
      datum.set_data(jpeg.data(), jpeg.size());
      datum.set_label(i % 3);
      jpeg_txn->Put(FormatKey(i, 8), datum.SerializeAsString());
      const std::string name = "img" + std::to_string(i) + ".png";
      ASSERT_TRUE(cv::imwrite(dir_.path() + "/" + name, image));
      list << name << " " << i % 3 << "\n";
    }
    txn->Commit();
    jpeg_txn->Commit();
  }

  // The Data layer of the LMDB, or an ImageData layer over the shuffled list; both crop
  // 4 x 4 at random and mirror, with three batches prefetched by two threads.
  std::string DataLayer(bool image_list) const {
    const std::string transform = "transform_param { crop_size: 4 mirror: true scale: 0.004 } ";
    if (image_list) {
      return "layer { name: 'data' type: 'ImageData' top: 'data' top: 'label' " + transform +
             "image_data_param { source: '" + dir_.path() + "/list.txt' root_folder: '" +
             dir_.path() +
             "/' batch_size: 4 shuffle: true is_color: false threads: 2 } "
             "data_param { prefetch: 3 } }";
    }
    return "layer { name: 'data' type: 'Data' top: 'data' top: 'label' " + transform +
           "data_param { source: '" + dir_.path() +
           "/lmdb' batch_size: 4 prefetch: 3 threads: 2 } }";
  }

  // The Data layer of the JPEG LMDB with random-resized crops (drawn once the record's size
  // is known, from its position) and mirrors.
  std::string JpegDataLayer() const {
    return "layer { name: 'data' type: 'Data' top: 'data' top: 'label' transform_param { "
           "resized_crop_size: 4 resized_crop_scale_min: 0.3 mirror: true scale: 0.004 } "
           "data_param { source: '" +
           dir_.path() + "/jpeg_lmdb' batch_size: 4 prefetch: 3 threads: 2 } }";
  }

  SolverParameter Param(bool image_list) const { return ParamFor(DataLayer(image_list)); }

  SolverParameter ParamFor(const std::string& data_layer) const {
    SolverParameter param = ParseText<SolverParameter>(
        "type: 'SGD' base_lr: 0.05 momentum: 0.9 lr_policy: 'fixed' display: 0 random_seed: 7 "
        "snapshot_after_train: false max_iter: " +
        std::to_string(kTotal) + " snapshot_prefix: '" + dir_.path() + "/snap'");
    *param.mutable_net_param() = ParseText<NetParameter>(data_layer + kBody);
    return param;
  }

  // The weights after kTotal iterations straight through.
  static std::vector<float> Uninterrupted(const SolverParameter& param) {
    auto solver = SolverRegistry<float>::CreateSolver(param);
    solver->Step(kTotal);
    return Weights(*solver);
  }

  // Runs kBefore iterations and snapshots; returns the state file, its contents in *state.
  std::string Interrupt(const SolverParameter& param, SolverState* state) const {
    auto first = SolverRegistry<float>::CreateSolver(param);
    first->Step(kBefore);
    first->Snapshot();
    const std::string file = dir_.path() + "/snap_iter_" + std::to_string(kBefore) + ".solverstate";
    ReadProtoFromBinaryFile(file, state);
    return file;
  }

  TempDir dir_;
};

TEST_F(ExactResumeTest, ResumedRunEqualsTheUninterruptedOneBitForBit) {
  const std::pair<const char*, std::string> inputs[] = {
      {"Data, LMDB", DataLayer(false)},
      {"ImageData, shuffled list", DataLayer(true)},
      {"Data, JPEG LMDB, random-resized crops", JpegDataLayer()},
  };
  for (const auto& [name, data_layer] : inputs) {
    SCOPED_TRACE(name);
    const SolverParameter param = ParamFor(data_layer);
    SolverState state;
    const std::string state_file = Interrupt(param, &state);
    ASSERT_EQ(state.data_position_size(), 1);
    EXPECT_EQ(state.data_position(0).layer(), "data");
    EXPECT_EQ(state.data_position(0).position(), 4u * kBefore);

    auto resumed = SolverRegistry<float>::CreateSolver(param);
    resumed->Restore(state_file);
    resumed->Step(kTotal - kBefore);
    EXPECT_EQ(Weights(*resumed), Uninterrupted(param));
  }
}

// A state without positions (Caffe's, or an older Doppio's) still resumes, with a warning;
// its data starts over, so the run differs from the uninterrupted one.
TEST_F(ExactResumeTest, AStateWithoutAPositionRestartsTheDataWithAWarning) {
  const SolverParameter param = Param(false);
  SolverState state;
  const std::string state_file = Interrupt(param, &state);
  state.clear_data_position();
  WriteProtoToBinaryFile(state, state_file);

  LogCapture warnings(google::WARNING);
  auto resumed = SolverRegistry<float>::CreateSolver(param);
  resumed->Restore(state_file);
  EXPECT_CONTAINS(warnings.text(), "no data position for layer 'data'");
  EXPECT_CONTAINS(warnings.text(), "starts over");
  resumed->Step(kTotal - kBefore);
  EXPECT_NE(Weights(*resumed), Uninterrupted(param));
}

// The same with the records in HDF5 files read by a shuffled HDF5Data layer, snapshotting in
// Caffe's HDF5 format: the data position travels in the .solverstate.h5.
TEST_F(ExactResumeTest, Hdf5DataResumesFromAnHdf5SnapshotBitForBit) {
  std::ofstream list(dir_.path() + "/h5list.txt");
  for (int file = 0; file < 2; ++file) {
    std::vector<float> data, label;
    for (int i = file * 6; i < std::min(kRecords, file * 6 + 6); ++i) {
      for (int h = 0; h < 6; ++h)
        for (int w = 0; w < 6; ++w) data.push_back(0.004f * Pixel(i, h, w));
      label.push_back(static_cast<float>(i % 3));
    }
    const int rows = static_cast<int>(label.size());
    Hdf5Writer writer;
    writer.Write("data", {rows, 1, 6, 6}, data.data());
    writer.Write("label", {rows}, label.data());
    const std::string path = dir_.path() + "/part" + std::to_string(file) + ".h5";
    WriteFileAtomically(writer.Image(), path);
    list << path << "\n";
  }
  list.close();
  SolverParameter param = Param(false);
  param.set_snapshot_format(SolverParameter::HDF5);
  *param.mutable_net_param() = ParseText<NetParameter>(
      "layer { name: 'data' type: 'HDF5Data' top: 'data' top: 'label' hdf5_data_param { "
      "source: '" +
      dir_.path() + "/h5list.txt' batch_size: 4 shuffle: true } }" + kBody);

  auto first = SolverRegistry<float>::CreateSolver(param);
  first->Step(kBefore);
  first->Snapshot();
  const std::string state_file = dir_.path() + "/snap_iter_3.solverstate.h5";
  SolverState state;
  ReadSolverStateFile(state_file, &state);
  ASSERT_EQ(state.data_position_size(), 1);
  EXPECT_EQ(state.data_position(0).position(), 4u * kBefore);

  auto resumed = SolverRegistry<float>::CreateSolver(param);
  resumed->Restore(state_file);
  resumed->Step(kTotal - kBefore);
  EXPECT_EQ(Weights(*resumed), Uninterrupted(param));
}

}  // namespace
}  // namespace doppio
