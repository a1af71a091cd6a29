// libdoppio_python_layer: Caffe's PythonLayer (doppio/layers/python_layer.hpp). The layer
// imports python_param.module, makes an object of the class python_param.layer and calls
// its setup / reshape / forward / backward with the bottom and top blobs as doppio.Blob
// objects. libdoppio opens this module the first time a net has a Python layer.
#include <pybind11/embed.h>

#include <string>

#include "bindings.hpp"
#include "doppio/layers/python_layer.hpp"

namespace doppio {
namespace {

// The interpreter: the process's own inside Python; else one started here, once, whose GIL
// is then released so that any thread can take it (GIL taken around every call below).
void EnsureInterpreter() {
  static const bool started = [] {
    if (Py_IsInitialized()) return false;
    py::initialize_interpreter();
    // The doppio package, for the Blob objects and for the layer's own `import caffe`.
    py::module_::import("sys").attr("path").attr("append")(DOPPIO_PYTHON_TREE);
    PyEval_SaveThread();
    return true;
  }();
  (void)started;
}

// "Type: message" and the traceback of the Python exception being handled.
std::string PythonErrorText(const py::error_already_set& error) {
  try {
    const py::object format = py::module_::import("traceback").attr("format_exception");
    const py::handle trace = error.trace() ? error.trace() : py::none();
    const py::list lines = format(error.type(), error.value(), trace);
    std::string text;
    for (const py::handle line : lines) text += py::cast<std::string>(line);
    while (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
  } catch (const std::exception&) {
    return error.what();
  }
}

class PythonLayer : public Layer<float> {
 public:
  explicit PythonLayer(const LayerParameter& param) : Layer<float>(param) {
    const PythonParameter& python = param.python_param();
    DOPPIO_ENSURE(!python.module().empty() && !python.layer().empty())
        << Describe() << ": python_param needs both module and layer";
    py::gil_scoped_acquire gil;
    py::object module;
    try {
      module = py::module_::import("doppio._doppio");
      module = py::module_::import(python.module().c_str());
    } catch (const py::error_already_set& error) {
      DOPPIO_FAIL() << Describe() << ": cannot import Python module '" << python.module()
                    << "' (looked for on PYTHONPATH):\n"
                    << PythonErrorText(error);
    }
    py::object cls = py::getattr(module, python.layer().c_str(), py::none());
    DOPPIO_ENSURE(!cls.is_none()) << Describe() << ": Python module '" << python.module()
                                  << "' has no class '" << python.layer() << "'";
    Call("create an object of class '" + python.layer() + "'", [&] {
      // The attributes come before __init__, which may read them.
      self_ = cls.attr("__new__")(cls);
      self_.attr("param_str") = python.param_str();
      self_.attr("param_str_") = python.param_str();
      self_.attr("phase") = static_cast<int>(this->phase_);
      self_.attr("shard_rank") = param.data_param().shard_rank();
      self_.attr("shard_size") = param.data_param().shard_size();
      self_.attr("blobs") = py::cast(&this->blobs_, py::return_value_policy::reference);
      // As pycaffe, __init__ gets the layer's LayerParameter (a doppio_pb2 message).
      const py::object message = py::module_::import("doppio.proto.doppio_pb2")
                                     .attr("LayerParameter")
                                     .attr("FromString")(py::bytes(param.SerializeAsString()));
      self_.attr("__init__")(message);
    });
  }
  ~PythonLayer() override {
    py::gil_scoped_acquire gil;
    // The object may outlive the layer in Python: its blobs then stop being this layer's.
    if (self_) self_.attr("blobs") = py::cast(BlobVector(this->blobs_));
    self_ = py::object();
  }

  const char* type() const override { return "Python"; }
  PyObject* object() const { return self_.ptr(); }

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    Call("setup", [&] { self_.attr("setup")(Blobs(bottom), Blobs(top)); });
    // The blobs setup added are learnable (unless the net's param specs say otherwise).
    this->param_propagate_down_.resize(this->blobs_.size(), true);
  }
  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    Call("reshape", [&] { self_.attr("reshape")(Blobs(bottom), Blobs(top)); });
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    Call("forward", [&] { self_.attr("forward")(Blobs(bottom), Blobs(top)); });
  }
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    Call("backward",
         [&] { self_.attr("backward")(Blobs(top), py::cast(propagate_down), Blobs(bottom)); });
  }

 private:
  // The blobs as a list of doppio.Blob objects that refer to them (the net owns them).
  static py::list Blobs(const BlobVec& blobs) {
    py::list list;
    for (Blob<float>* blob : blobs) list.append(py::cast(blob, py::return_value_policy::reference));
    return list;
  }

  // Runs `body` holding the GIL; a Python exception becomes an Error naming the layer, the
  // method and the traceback, and the layer stays usable.
  template <typename Body>
  void Call(const std::string& what, Body&& body) const {
    py::gil_scoped_acquire gil;
    try {
      body();
    } catch (const py::error_already_set& error) {
      DOPPIO_FAIL() << Describe() << ": Python raised in " << what << ":\n"
                    << PythonErrorText(error);
    }
  }

  py::object self_;
};

}  // namespace
}  // namespace doppio

extern "C" __attribute__((visibility("default"))) doppio::Layer<float>* DoppioCreatePythonLayer(
    const doppio::LayerParameter& param) {
  doppio::EnsureInterpreter();
  return new doppio::PythonLayer(param);
}

extern "C" __attribute__((visibility("default"))) void* DoppioPythonLayerObject(
    const doppio::Layer<float>& layer) {
  return static_cast<const doppio::PythonLayer&>(layer).object();
}
