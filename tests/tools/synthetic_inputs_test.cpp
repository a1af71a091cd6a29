// WithSyntheticInputs: the tops of each data layer take their shapes from the layer's source,
// as the layer itself would make them, and fall back as documented.
#include "synthetic_inputs.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "../data/data_test_helpers.hpp"
#include "doppio/util/hdf5.hpp"
#include "doppio/util/io.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

using testing_data::IndexedDatums;
using testing_data::WriteDatumLmdb;
using testing_data::WriteLmdb;

// The shapes of the DummyData layer that replaced `name`.
std::vector<std::vector<int>> TopShapes(const NetParameter& net, const std::string& name) {
  for (const auto& layer : net.layer()) {
    if (layer.name() != name) continue;
    EXPECT_EQ(layer.type(), "DummyData");
    std::vector<std::vector<int>> shapes;
    for (const auto& shape : layer.dummy_data_param().shape()) {
      shapes.emplace_back(shape.dim().begin(), shape.dim().end());
    }
    return shapes;
  }
  ADD_FAILURE() << "no layer '" << name << "'";
  return {};
}

// A TRAIN net whose only layer is `layer` (its text without the braces), with tops data and
// label.
NetParameter OneLayerNet(const std::string& layer) {
  return ReadNetParamsFromTextString(
      "name: 'n' state { phase: TRAIN } layer { name: 'in' top: 'data' top: 'label' " + layer +
          " }",
      "test");
}

using Shapes = std::vector<std::vector<int>>;

class SyntheticInputsTest : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) const { return dir_.path() + "/" + name; }
  // An LMDB of one encoded `rows` x `cols` colour image.
  std::string EncodedLmdb(int rows, int cols) {
    std::vector<unsigned char> png;
    EXPECT_TRUE(cv::imencode(".png", cv::Mat(rows, cols, CV_8UC3, cv::Scalar(1, 2, 3)), png));
    Datum datum;
    datum.set_data(png.data(), png.size());
    datum.set_encoded(true);
    const std::string path = Path("encoded");
    WriteDatumLmdb(path, {datum});
    return path;
  }
  TempDir dir_;
};

TEST_F(SyntheticInputsTest, RawLmdbGivesItsFirstDatumsShape) {
  const std::string source = Path("raw");
  WriteDatumLmdb(source, IndexedDatums(3, 2, 5, 7));
  const NetParameter net =
      OneLayerNet("type: 'Data' data_param { source: '" + source + "' batch_size: 6 }");
  EXPECT_EQ(TopShapes(WithSyntheticInputs(net, 0, {}), "in"), (Shapes{{6, 2, 5, 7}, {6}}));
  // --batch overrides the layer's batch size, not the image.
  EXPECT_EQ(TopShapes(WithSyntheticInputs(net, 3, {}), "in"), (Shapes{{3, 2, 5, 7}, {3}}));
}

TEST_F(SyntheticInputsTest, EncodedLmdbIsDecodedAndCropped) {
  const std::string source = EncodedLmdb(20, 30);
  const std::string data = "data_param { source: '" + source + "' batch_size: 4 }";
  EXPECT_EQ(TopShapes(WithSyntheticInputs(OneLayerNet("type: 'Data' " + data), 0, {}), "in"),
            (Shapes{{4, 3, 20, 30}, {4}}));
  EXPECT_EQ(
      TopShapes(WithSyntheticInputs(
                    OneLayerNet("type: 'Data' transform_param { crop_size: 16 } " + data), 0, {}),
                "in"),
      (Shapes{{4, 3, 16, 16}, {4}}));
  // A deprecated crop in data_param counts as the layer counts it.
  EXPECT_EQ(TopShapes(WithSyntheticInputs(OneLayerNet("type: 'Data' data_param { source: '" +
                                                      source + "' batch_size: 4 crop_size: 8 }"),
                                          0, {}),
                      "in"),
            (Shapes{{4, 3, 8, 8}, {4}}));
}

TEST_F(SyntheticInputsTest, ImageListGivesItsFirstImageResizedAndCropped) {
  ASSERT_TRUE(cv::imwrite(Path("a.png"), cv::Mat(24, 32, CV_8UC3, cv::Scalar(9, 9, 9))));
  ASSERT_TRUE(cv::imwrite(Path("b.png"), cv::Mat(8, 8, CV_8UC3, cv::Scalar(9, 9, 9))));
  std::ofstream(Path("list.txt")) << Path("a.png") << " 0\n" << Path("b.png") << " 1\n";
  const std::string list = "source: '" + Path("list.txt") + "' batch_size: 5";
  EXPECT_EQ(
      TopShapes(WithSyntheticInputs(
                    OneLayerNet("type: 'ImageData' image_data_param { " + list + " }"), 0, {}),
                "in"),
      (Shapes{{5, 3, 24, 32}, {5}}));
  EXPECT_EQ(
      TopShapes(WithSyntheticInputs(OneLayerNet("type: 'ImageData' image_data_param { " + list +
                                                " new_height: 12 new_width: 10 "
                                                "is_color: false }"),
                                    0, {}),
                "in"),
      (Shapes{{5, 1, 12, 10}, {5}}));
  EXPECT_EQ(TopShapes(WithSyntheticInputs(
                          OneLayerNet("type: 'ImageData' transform_param { crop_size: 6 } "
                                      "image_data_param { " +
                                      list + " }"),
                          0, {}),
                      "in"),
            (Shapes{{5, 3, 6, 6}, {5}}));
}

TEST_F(SyntheticInputsTest, Hdf5ListGivesEveryDatasetsShape) {
  std::vector<float> values(4 * 2 * 3 * 5, 0.f);
  Hdf5Writer file;
  file.Write("data", {4, 2, 3, 5}, values.data());
  file.Write("label", {4, 3}, values.data());
  WriteFileAtomically(file.Image(), Path("a.h5"));
  std::ofstream(Path("h5.txt")) << Path("a.h5") << "\n";
  const NetParameter net = OneLayerNet("type: 'HDF5Data' hdf5_data_param { source: '" +
                                       Path("h5.txt") + "' batch_size: 7 }");
  EXPECT_EQ(TopShapes(WithSyntheticInputs(net, 0, {}), "in"), (Shapes{{7, 2, 3, 5}, {7, 3}}));
}

TEST_F(SyntheticInputsTest, WindowFileGivesItsImagesChannels) {
  ASSERT_TRUE(cv::imwrite(Path("w.png"), cv::Mat(12, 16, CV_8UC1, cv::Scalar(5))));
  std::ofstream(Path("windows.txt")) << "# 0\nw.png\n1 12 16\n2\n1 0.9 2 2 5 9\n1 0.1 0 0 15 11\n";
  const NetParameter net = OneLayerNet(
      "type: 'WindowData' transform_param { crop_size: 8 } window_data_param { source: '" +
      Path("windows.txt") + "' root_folder: '" + dir_.path() + "/' batch_size: 2 }");
  EXPECT_EQ(TopShapes(WithSyntheticInputs(net, 0, {}), "in"), (Shapes{{2, 1, 8, 8}, {2}}));
}

TEST_F(SyntheticInputsTest, InputShapeWinsOverTheSource) {
  const std::string source = Path("raw");
  WriteDatumLmdb(source, IndexedDatums(1, 2, 5, 7));
  const NetParameter net =
      OneLayerNet("type: 'Data' data_param { source: '" + source + "' batch_size: 2 }");
  EXPECT_EQ(TopShapes(WithSyntheticInputs(net, 0, {3, 4, 4}), "in"), (Shapes{{2, 3, 4, 4}, {2}}));
}

TEST_F(SyntheticInputsTest, MissingSourceFallsBackToTheCropOrNamesTheSource) {
  const std::string missing = Path("missing_lmdb");
  const std::string data = "data_param { source: '" + missing + "' batch_size: 2 }";
  EXPECT_EQ(
      TopShapes(WithSyntheticInputs(
                    OneLayerNet("type: 'Data' transform_param { crop_size: 9 } " + data), 0, {}),
                "in"),
      (Shapes{{2, 3, 9, 9}, {2}}));
  ExpectError([&] { WithSyntheticInputs(OneLayerNet("type: 'Data' " + data), 0, {}); },
              {"layer 'in' (Data)", "cannot tell the image size", "'" + missing + "'",
               "data_param.source", "no such folder", "--input_shape"});
  ExpectError(
      [&] { WithSyntheticInputs(OneLayerNet("type: 'Data' data_param { batch_size: 2 }"), 0, {}); },
      {"layer 'in' (Data)", "data_param.source is not set", "--input_shape"});
}

TEST_F(SyntheticInputsTest, UnreadableSourceNamesTheLayersReason) {
  // An LMDB whose record is not a Datum.
  const std::string source = Path("garbage");
  WriteLmdb(source, {"not a datum"});
  ExpectError(
      [&] {
        WithSyntheticInputs(
            OneLayerNet("type: 'Data' data_param { source: '" + source + "' batch_size: 2 }"), 0,
            {});
      },
      {"layer 'in' (Data)", "'" + source + "'", "cannot be read", "is not a Datum"});
}

TEST_F(SyntheticInputsTest, LayersOutsideTheStateAreNotRead) {
  const std::string source = Path("raw");
  WriteDatumLmdb(source, IndexedDatums(1, 1, 4, 4));
  const NetParameter net = ReadNetParamsFromTextString(
      "name: 'n' state { phase: TRAIN } "
      "layer { name: 'train' type: 'Data' top: 'data' include { phase: TRAIN } "
      "data_param { source: '" +
          source +
          "' batch_size: 2 } } "
          "layer { name: 'test' type: 'Data' top: 'data' include { phase: TEST } "
          "data_param { source: '/no/such/lmdb' batch_size: 2 } }",
      "test");
  const NetParameter synthetic = WithSyntheticInputs(net, 0, {});
  ASSERT_EQ(synthetic.layer_size(), 2);
  EXPECT_EQ(TopShapes(synthetic, "train"), (Shapes{{2, 1, 4, 4}}));
  // A net of this state leaves the other out; with a crop it is made synthetic too.
  EXPECT_EQ(synthetic.layer(1).type(), "Data");
}

}  // namespace
}  // namespace doppio
