// Net: construction as pycaffe's (file, phase, level, stages, weights; or the old file,
// weights, phase), the runs between layers, weights in and out, the layer callbacks, and
// the indices pycaffe.py builds its dictionaries from.
#include <pybind11/numpy.h>

#include <algorithm>
#include <optional>
#include <string>

#include "bindings.hpp"
#include "doppio/core/net.hpp"
#include "doppio/layers/memory_data_layer.hpp"
#include "doppio/layers/python_layer.hpp"
#include "doppio/solvers/weights.hpp"
#include "doppio/util/hdf5.hpp"
#include "doppio/util/io.hpp"
#include "doppio/util/snapshot_files.hpp"
#include "runtime.hpp"

namespace doppio::python {
namespace {

using FloatNet = Net<float>;

Phase PhaseFromInt(int phase) {
  if (phase != TRAIN && phase != TEST) {
    throw py::value_error("phase is caffe.TRAIN (0) or caffe.TEST (1), not " +
                          std::to_string(phase));
  }
  return static_cast<Phase>(phase);
}

void CheckWeightFilesExist(const std::string& files) {
  std::size_t start = 0;
  while (start <= files.size()) {
    const std::size_t comma = std::min(files.find(',', start), files.size());
    if (comma > start) CheckFileExists(files.substr(start, comma - start), "the weights file");
    start = comma + 1;
  }
}

std::shared_ptr<FloatNet> MakeNet(const std::string& file, int phase, int level,
                                  const std::vector<std::string>& stages,
                                  const std::optional<std::string>& weights) {
  CheckFileExists(file, "the net prototxt");
  const Phase net_phase = PhaseFromInt(phase);
  if (weights) CheckWeightFilesExist(*weights);
  NetParameter param = ReadNetParamsFromTextFile(file);
  NetState* state = param.mutable_state();
  state->set_phase(net_phase);
  state->set_level(level);
  state->clear_stage();
  for (const std::string& stage : stages) state->add_stage(stage);
  Runtime& runtime = Runtime::Get();
  auto net = std::make_shared<FloatNet>(param, runtime.net_seed(), runtime.gpu());
  if (weights) LoadNetWeights(net.get(), *weights);
  return net;
}

// The index of each of `blobs` among the net's blobs.
std::vector<int> BlobIndices(const FloatNet& net, const std::vector<Blob<float>*>& blobs) {
  std::vector<int> indices;
  for (const Blob<float>* blob : blobs) {
    const auto& all = net.blobs();
    const auto found = std::find_if(all.begin(), all.end(),
                                    [&](const auto& candidate) { return candidate.get() == blob; });
    indices.push_back(static_cast<int>(found - all.begin()));
  }
  return indices;
}

void CheckLayerRange(const FloatNet& net, int start, int end, const char* what) {
  const int count = static_cast<int>(net.layers().size());
  if (start < 0 || start >= count || end < 0 || end >= count) {
    throw py::index_error(std::string(what) + ": layers " + std::to_string(start) + " to " +
                          std::to_string(end) + " are not in a net of " + std::to_string(count) +
                          " layers");
  }
}

std::string RequireHdf5Name(const std::string& filename, const char* what) {
  if (!IsHdf5Path(filename)) {
    throw py::value_error(std::string(what) + ": " + filename +
                          " does not end in .h5, which is how Doppio (like Caffe's "
                          "weights and snapshot readers) tells an HDF5 file");
  }
  return filename;
}

// MemoryData's arrays are not copied: the net keeps references to them (_input_arrays).
void SetInputArrays(const py::object& self, const py::object& data_object,
                    const py::object& labels_object) {
  FloatNet& net = py::cast<FloatNet&>(self);
  auto* layer =
      net.layers().empty() ? nullptr : dynamic_cast<MemoryDataLayer<float>*>(net.layers()[0].get());
  if (layer == nullptr) {
    throw py::value_error("set_input_arrays: the first layer of net '" + net.name() +
                          "' is not a MemoryData layer");
  }
  const auto data = py::array_t<float, py::array::c_style>::ensure(data_object);
  const auto labels = py::array_t<float, py::array::c_style>::ensure(labels_object);
  if (!data || !labels || !py::isinstance<py::array_t<float>>(data_object) ||
      !py::isinstance<py::array_t<float>>(labels_object) ||
      !(py::cast<py::array>(data_object).flags() & py::array::c_style) ||
      !(py::cast<py::array>(labels_object).flags() & py::array::c_style)) {
    throw py::value_error(
        "set_input_arrays: data and labels are C-contiguous float32 arrays (np.float32, "
        "np.ascontiguousarray), as the layer reads them in place without a copy");
  }
  const std::vector<py::ssize_t> want = {layer->channels(), layer->height(), layer->width()};
  if (data.ndim() != 4 || !std::equal(want.begin(), want.end(), data.shape() + 1)) {
    throw py::value_error("set_input_arrays: layer '" + layer->name() +
                          "' takes data of shape (N, " + std::to_string(want[0]) + ", " +
                          std::to_string(want[1]) + ", " + std::to_string(want[2]) + ")");
  }
  const py::ssize_t n = data.shape(0);
  if (labels.size() != n) {
    throw py::value_error("set_input_arrays: " + std::to_string(labels.size()) + " labels for " +
                          std::to_string(n) + " items");
  }
  layer->Reset(data.data(), labels.data(), static_cast<int>(n));
  self.attr("_input_arrays") = py::make_tuple(data_object, labels_object);
}

// A Python layer is handed out as its Python object, as pycaffe does.
py::object LayerObject(const std::shared_ptr<Layer<float>>& layer) {
  if (void* object = PythonLayerObject(*layer)) {
    return py::reinterpret_borrow<py::object>(static_cast<PyObject*>(object));
  }
  return py::cast(layer);
}

}  // namespace

void BindNet(py::module_& m) {
  using Callback = std::function<void(int)>;
  py::class_<FloatNet, std::shared_ptr<FloatNet>>(m, "Net", py::dynamic_attr())
      .def(py::init([](const std::string& file, int phase, int level,
                       const std::optional<std::vector<std::string>>& stages,
                       const std::optional<std::string>& weights) {
             return MakeNet(file, phase, level, stages.value_or(std::vector<std::string>()),
                            weights);
           }),
           py::arg("network_file"), py::arg("phase"), py::arg("level") = 0,
           py::arg("stages") = py::none(), py::arg("weights") = py::none())
      .def(py::init([](const std::string& file, const std::string& weights, int phase) {
             return MakeNet(file, phase, 0, {}, weights);
           }),
           py::arg("network_file"), py::arg("pretrained_param_file"), py::arg("phase"))
      .def_property_readonly("name", &FloatNet::name)
      .def_property_readonly("phase",
                             [](const FloatNet& net) { return static_cast<int>(net.phase()); })
      .def("_forward", &FloatNet::ForwardFromTo, py::arg("start"), py::arg("end"),
           py::call_guard<py::gil_scoped_release>())
      .def("_backward", &FloatNet::BackwardFromTo, py::arg("start"), py::arg("end"),
           py::call_guard<py::gil_scoped_release>())
      .def("_check_range", &CheckLayerRange)
      .def("reshape", &FloatNet::Reshape, py::call_guard<py::gil_scoped_release>())
      .def("clear_param_diffs", &FloatNet::ClearParamDiffs)
      .def(
          "copy_from",
          [](FloatNet& net, const std::string& files) {
            CheckWeightFilesExist(files);
            LoadNetWeights(&net, files);
          },
          py::arg("filename"), "Copies trained weights by layer name (Caffe's fine-tuning rule).")
      .def("share_with", &FloatNet::ShareTrainedLayersWith, py::arg("other"),
           "Shares the weights of the other net's layers of the same names (no copy).")
      .def(
          "save",
          [](const FloatNet& net, const std::string& filename, bool write_diff) {
            NetParameter param;
            net.ToProto(&param, write_diff);
            WriteWeightsFile(param, filename);
          },
          py::arg("filename"), py::arg("write_diff") = false)
      .def(
          "save_hdf5",
          [](const FloatNet& net, const std::string& filename, bool write_diff) {
            NetParameter param;
            net.ToProto(&param, write_diff);
            WriteWeightsFile(param, RequireHdf5Name(filename, "save_hdf5"));
          },
          py::arg("filename"), py::arg("write_diff") = false)
      .def(
          "load_hdf5",
          [](FloatNet& net, const std::string& filename) {
            CheckFileExists(filename, "the HDF5 weights file");
            LoadNetWeights(&net, RequireHdf5Name(filename, "load_hdf5"));
          },
          py::arg("filename"))
      .def("set_input_arrays", &SetInputArrays, py::arg("data"), py::arg("labels"))
      .def_property_readonly("_blobs", &FloatNet::blobs)
      .def_property_readonly("_blob_names", &FloatNet::blob_names)
      .def_property_readonly("_layer_names", &FloatNet::layer_names)
      .def_property_readonly("layers",
                             [](const FloatNet& net) {
                               py::list layers;
                               for (const auto& layer : net.layers())
                                 layers.append(LayerObject(layer));
                               return layers;
                             })
      .def_property_readonly(
          "_inputs", [](const FloatNet& net) { return BlobIndices(net, net.input_blobs()); })
      .def_property_readonly("_outputs", &FloatNet::output_blob_indices)
      .def_property_readonly("_blob_loss_weights", &FloatNet::blob_loss_weights)
      .def("_top_ids", [](const FloatNet& net, int layer) { return net.top_id_vecs().at(layer); })
      .def("_bottom_ids",
           [](const FloatNet& net, int layer) { return net.bottom_id_vecs().at(layer); })
      .def("before_forward",
           [](FloatNet& net, Callback callback) { net.add_before_forward(std::move(callback)); })
      .def("after_forward",
           [](FloatNet& net, Callback callback) { net.add_after_forward(std::move(callback)); })
      .def("before_backward",
           [](FloatNet& net, Callback callback) { net.add_before_backward(std::move(callback)); })
      .def("after_backward",
           [](FloatNet& net, Callback callback) { net.add_after_backward(std::move(callback)); });
}

}  // namespace doppio::python
