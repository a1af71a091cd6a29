// Layer: the layers of a net as pycaffe hands them out (type, blobs, setup, reshape). A
// Python layer is handed out as its own Python object instead (net_bindings.cpp).
#include "bindings.hpp"
#include "doppio/core/layer.hpp"

namespace doppio::python {

void BindLayer(py::module_& m) {
  using FloatLayer = Layer<float>;
  using Blobs = std::vector<Blob<float>*>;
  py::class_<FloatLayer, std::shared_ptr<FloatLayer>>(m, "Layer")
      .def_property_readonly("type",
                             [](const FloatLayer& layer) { return std::string(layer.type()); })
      .def_property_readonly("name", &FloatLayer::name)
      .def_property_readonly(
          "blobs", [](FloatLayer& layer) -> BlobVector& { return layer.blobs(); },
          py::return_value_policy::reference_internal)
      .def(
          "setup",
          [](FloatLayer& layer, const Blobs& bottom, const Blobs& top) {
            layer.SetUp(bottom, top);
          },
          py::arg("bottom"), py::arg("top"))
      .def(
          "reshape",
          [](FloatLayer& layer, const Blobs& bottom, const Blobs& top) {
            layer.Reshape(bottom, top);
          },
          py::arg("bottom"), py::arg("top"));
}

}  // namespace doppio::python
