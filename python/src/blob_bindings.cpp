// Blob: data and diff as numpy arrays that alias the blob's host memory, with pycaffe's
// shape accessors. An array keeps its Blob (and so the memory) alive; it stays valid until
// the blob is reshaped to a larger count, as in pycaffe.
#include <pybind11/numpy.h>
#include <pybind11/stl_bind.h>

#include <cstring>
#include <string>

#include "bindings.hpp"

namespace doppio::python {
namespace {

using FloatBlob = Blob<float>;

std::vector<int> ShapeFromArgs(const py::args& dims, const char* what) {
  std::vector<int> shape;
  for (const py::handle dim : dims) {
    const long long value = py::cast<long long>(dim);
    if (value < 0 || value > INT32_MAX) {
      throw py::value_error(std::string(what) + ": a dimension is >= 0 and fits int32, not " +
                            std::to_string(value));
    }
    shape.push_back(static_cast<int>(value));
  }
  return shape;
}

// A blob's name for messages: the one Net.blobs gave it, if any.
std::string BlobLabel(const py::object& self) {
  const py::object name = py::getattr(self, "_name", py::none());
  return name.is_none() ? std::string("the blob") : "blob '" + py::cast<std::string>(name) + "'";
}

std::string ShapeText(const std::vector<py::ssize_t>& shape) {
  std::string text = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    text += (i ? ", " : "") + std::to_string(shape[i]);
  }
  return text + (shape.size() == 1 ? ",)" : ")");
}

// The host memory of data (or diff) as a float32 array whose base is the Blob object.
py::array View(const py::object& self, bool diff) {
  FloatBlob& blob = py::cast<FloatBlob&>(self);
  const std::vector<py::ssize_t> shape(blob.shape().begin(), blob.shape().end());
  if (blob.count() == 0) return py::array_t<float>(shape);
  float* values = diff ? blob.mutable_cpu_diff() : blob.mutable_cpu_data();
  return py::array_t<float>(shape, values, self);
}

// blob.data = array: the same shape, real numbers (converted to float32), copied in.
void Assign(const py::object& self, const py::object& value, bool diff) {
  FloatBlob& blob = py::cast<FloatBlob&>(self);
  const py::array array = py::array::ensure(value);
  const char kind = array ? array.dtype().kind() : 'O';
  if (!array || (kind != 'f' && kind != 'i' && kind != 'u' && kind != 'b')) {
    throw py::value_error(BlobLabel(self) + " holds float32 values: cannot assign " +
                          (array ? "an array of dtype " + py::str(array.dtype()).cast<std::string>()
                                 : std::string("a value that is not an array")));
  }
  const std::vector<py::ssize_t> want(blob.shape().begin(), blob.shape().end());
  const std::vector<py::ssize_t> got(array.shape(), array.shape() + array.ndim());
  if (want != got) {
    throw py::value_error(BlobLabel(self) + " has shape " + ShapeText(want) +
                          "; cannot assign an array of shape " + ShapeText(got));
  }
  const auto values = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(array);
  if (blob.count() == 0) return;
  float* target = diff ? blob.mutable_cpu_diff() : blob.mutable_cpu_data();
  std::memcpy(target, values.data(), sizeof(float) * blob.count());
}

}  // namespace

void BindBlob(py::module_& m) {
  py::class_<FloatBlob, std::shared_ptr<FloatBlob>>(m, "Blob", py::dynamic_attr())
      .def(py::init([](const py::args& dims) {
             return std::make_shared<FloatBlob>(ShapeFromArgs(dims, "Blob"));
           }),
           "Blob(*shape): a blob of that shape (Blob() has none).")
      .def_property_readonly(
          "shape", [](const FloatBlob& blob) { return py::tuple(py::cast(blob.shape())); })
      .def_property_readonly("num", &FloatBlob::num)
      .def_property_readonly("channels", &FloatBlob::channels)
      .def_property_readonly("height", &FloatBlob::height)
      .def_property_readonly("width", &FloatBlob::width)
      .def_property_readonly("count", py::overload_cast<>(&FloatBlob::count, py::const_))
      .def(
          "reshape",
          [](FloatBlob& blob, const py::args& dims) {
            blob.Reshape(ShapeFromArgs(dims, "Blob.reshape"));
          },
          "reshape(*shape); the net's layers see it at the next Net.reshape().")
      .def_property(
          "data", [](const py::object& self) { return View(self, false); },
          [](const py::object& self, const py::object& value) { Assign(self, value, false); })
      .def_property(
          "diff", [](const py::object& self) { return View(self, true); },
          [](const py::object& self, const py::object& value) { Assign(self, value, true); });

  // Shared with the Python layer module, which hands a layer's own vector to its object
  // (bind_vector would make it local to this module: its element type is a holder).
  py::bind_vector<BlobVector>(m, "BlobVec", py::module_local(false))
      .def(
          "add_blob",
          [](BlobVector& blobs, const py::args& dims) {
            blobs.push_back(std::make_shared<FloatBlob>(ShapeFromArgs(dims, "add_blob")));
          },
          "add_blob(*shape): appends a parameter blob of that shape (in a Python layer's "
          "setup).");
}

}  // namespace doppio::python
