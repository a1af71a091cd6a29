#pragma once

#include "doppio/core/layer.hpp"

namespace doppio {

// Layers written in Python (type: "Python", python_param { module layer param_str }), as in
// Caffe. Their code is a module of its own, libdoppio_python_layer (python/src/python_layer.cpp),
// opened the first time a net has such a layer, so that libdoppio never links libpython: in a
// Python process (the doppio package) the module runs on that process's interpreter; in any
// other (`doppio train`) libpython is loaded first and an interpreter started, once.

// The Python object that implements a Python layer (a borrowed PyObject*), for the Python
// bindings, which hand it out as the layer; null for a layer of another type.
void* PythonLayerObject(const Layer<float>& layer);

}  // namespace doppio

// What the module exports: the layer for a parameter, and the object behind such a layer.
extern "C" doppio::Layer<float>* DoppioCreatePythonLayer(const doppio::LayerParameter& param);
extern "C" void* DoppioPythonLayerObject(const doppio::Layer<float>& layer);
