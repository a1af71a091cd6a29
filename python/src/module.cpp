// doppio._doppio: the native half of the doppio package (python/doppio/__init__.py is the
// other). pycaffe's module-level functions are here; the classes in their own files.
#include <glog/logging.h>

#include <cerrno>
#include <cstdio>
#include <string>

#include "bindings.hpp"
#include "doppio/core/layer_registry.hpp"
#include "doppio/util/error.hpp"
#include "runtime.hpp"

namespace doppio::python {

void StartLogging() {
  // Inside `doppio train` (a Python layer's interpreter) the tool has started glog already,
  // with its own settings.
  if (google::IsGoogleLoggingInitialized()) return;
  google::InitGoogleLogging("doppio");
  FLAGS_logtostderr = 1;
}

void InitLog(int level) {
  StartLogging();
  FLAGS_logtostderr = 1;
  FLAGS_minloglevel = level;
}

void BindRuntime(py::module_& m) {
  m.def(
      "set_mode_cpu", [] { Runtime::Get().set_gpu_mode(false); },
      "Nets and solvers made from now on run on the CPU.");
  m.def(
      "set_mode_gpu", [] { Runtime::Get().set_gpu_mode(true); },
      "Nets and solvers made from now on run on the GPU chosen by set_device (0 by default).");
  m.def(
      "set_device", [](int device) { Runtime::Get().set_device(device); }, py::arg("device"));
  m.def(
      "set_random_seed", [](std::uint64_t seed) { Runtime::Get().set_seed(seed); }, py::arg("seed"),
      "Seeds the fillers and random layers of the nets and solvers made from now on.");
  m.def("layer_type_list", [] { return LayerRegistry<float>::Types(); });
  m.def("init_log", &InitLog, py::arg("level") = 0,
        "Caffe's log lines to stderr from `level` up (0 INFO, 1 WARNING, 2 ERROR).");
  m.def(
      "log", [](const std::string& message) { LOG(INFO) << message; }, py::arg("message"));
  m.def("gpu_count", &GpuDeviceCount, "The CUDA devices this process can use (0 without).");
  m.def(
      "mpi_rank", [] { return Runtime::Get().communicator()->rank(); },
      "This process's rank in its MPI job (0 without one).");
  m.def(
      "mpi_size", [] { return Runtime::Get().communicator()->size(); },
      "The number of ranks of this process's MPI job (1 without one).");

  m.attr("TRAIN") = static_cast<int>(TRAIN);
  m.attr("TEST") = static_cast<int>(TEST);
  m.attr("__version__") = DOPPIO_VERSION;
}

void CheckFileExists(const std::string& path, const char* what) {
  if (std::FILE* file = std::fopen(path.c_str(), "rb")) {
    std::fclose(file);
    return;
  }
  const std::string message = std::string("cannot open ") + what + " " + path;
  PyErr_SetObject(PyExc_FileNotFoundError, py::make_tuple(ENOENT, message, path).ptr());
  throw py::error_already_set();
}

}  // namespace doppio::python

PYBIND11_MODULE(_doppio, m) {
  m.doc() = "Doppio's native classes and functions (use the doppio or caffe package)";
  py::register_exception<doppio::Error>(m, "Error", PyExc_RuntimeError);
  // Caffe's log lines to stderr from the start, as pycaffe prints them.
  doppio::python::StartLogging();
  doppio::python::Runtime::Get().StartThreads();
  doppio::python::BindRuntime(m);
  doppio::python::BindBlob(m);
  doppio::python::BindLayer(m);
  doppio::python::BindNet(m);
  doppio::python::BindSolver(m);
  // MPI is finalised, and the GPU released, before the interpreter's own teardown.
  py::module_::import("atexit").attr("register")(
      py::cpp_function([] { doppio::python::Runtime::Get().Shutdown(); }));
}
