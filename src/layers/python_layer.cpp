#include "doppio/layers/python_layer.hpp"

#include <dlfcn.h>

#include <string>

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/library_module.hpp"

namespace doppio {

#ifdef DOPPIO_PYTHON_LAYER_MODULE
namespace {

struct PythonLayerModule {
  decltype(&DoppioCreatePythonLayer) create;
  decltype(&DoppioPythonLayerObject) object;
};

const PythonLayerModule& OpenPythonLayerModule() {
  static const PythonLayerModule module = [] {
    // Outside a Python process, libpython goes in first and globally: the module and the
    // extension modules the layer's code imports (numpy's) are not linked to it, as
    // extension modules never are, and find its symbols there.
    if (dlsym(RTLD_DEFAULT, "Py_IsInitialized") == nullptr) {
      // DOPPIO_LIBPYTHON: the file name of the libpython the module was built against.
      if (dlopen(DOPPIO_LIBPYTHON, RTLD_NOW | RTLD_GLOBAL) == nullptr) {
        const char* reason = dlerror();
        DOPPIO_FAIL() << "a Python layer needs the Python library " << DOPPIO_LIBPYTHON << ": "
                      << (reason ? reason : "unknown reason");
      }
    }
    const LibraryModule library =
        OpenLibraryModule(DOPPIO_PYTHON_LAYER_MODULE, "the Python layer module");
    return PythonLayerModule{reinterpret_cast<decltype(&DoppioCreatePythonLayer)>(
                                 library.Symbol("DoppioCreatePythonLayer")),
                             reinterpret_cast<decltype(&DoppioPythonLayerObject)>(
                                 library.Symbol("DoppioPythonLayerObject"))};
  }();
  return module;
}

// The data-parallel trainer gives each rank's Python layers their shard (self.shard_rank,
// self.shard_size) in data_param, as HDF5Data's: Caffe's python_param has no field for it.
void ShardPythonParam(LayerParameter* param, int rank, int size) {
  param->mutable_data_param()->set_shard_rank(rank);
  param->mutable_data_param()->set_shard_size(size);
}

const LayerTraits kPythonTraits = LayerTraits().Shardable(ShardPythonParam);

LayerRegisterer<float> g_python_layer_f(
    "Python",
    [](const LayerParameter& param) {
      return std::shared_ptr<Layer<float>>(OpenPythonLayerModule().create(param));
    },
    kPythonTraits);
LayerRegisterer<double> g_python_layer_d(
    "Python",
    [](const LayerParameter& param) -> std::shared_ptr<Layer<double>> {
      DOPPIO_FAIL() << "layer '" << param.name()
                    << "' (Python): Python layers compute in float, as Caffe's do, not double";
    },
    kPythonTraits);

}  // namespace

void* PythonLayerObject(const Layer<float>& layer) {
  if (std::string(layer.type()) != "Python") return nullptr;
  return OpenPythonLayerModule().object(layer);
}

#else

REGISTER_UNSUPPORTED_LAYER(
    Python, LayerTraits().Unsupported("this build of Doppio has no Python (it was configured "
                                      "with DOPPIO_PYTHON=OFF, or without python3-dev and "
                                      "pybind11-dev): rebuild with them to run Python layers"));

void* PythonLayerObject(const Layer<float>& layer) { return nullptr; }

#endif

}  // namespace doppio
