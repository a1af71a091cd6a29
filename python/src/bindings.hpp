#pragma once

// The pieces of the extension doppio._doppio, one file per class bound (docs/python.md).
// The bindings are thin: what pycaffe does in Python (forward's keyword inputs, the
// OrderedDicts of blobs and params) is in python/doppio/pycaffe.py.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <vector>

#include "doppio/core/blob.hpp"

namespace py = pybind11;

// A layer's parameter blobs are handed out as the layer's own vector (Layer.blobs, with
// add_blob), not as a copied list: pycaffe's net surgery writes through them.
using BlobVector = std::vector<std::shared_ptr<doppio::Blob<float>>>;
PYBIND11_MAKE_OPAQUE(BlobVector);

namespace doppio::python {

void BindRuntime(py::module_& m);
void BindBlob(py::module_& m);
void BindLayer(py::module_& m);
void BindNet(py::module_& m);
void BindSolver(py::module_& m);

// Raises FileNotFoundError naming `path` (and what it is) when no such file exists: pycaffe's
// callers catch IOError, which Doppio's own Error is not.
void CheckFileExists(const std::string& path, const char* what);

// glog to stderr, as pycaffe logs, unless the process has started it already.
void StartLogging();
void InitLog(int level);

}  // namespace doppio::python
