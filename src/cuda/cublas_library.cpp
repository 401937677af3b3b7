#include "cuda/cublas_library.hpp"

#include <dlfcn.h>

#include <mutex>
#include <string>

#include "backplane/error.hpp"

namespace backplane::cuda {
namespace {

#ifndef BACKPLANE_CUBLAS_SONAME
#define BACKPLANE_CUBLAS_SONAME "libcublas.so"
#endif

template <class Fn>
void Resolve(void* library, const char* name, Fn& slot) {
  slot = reinterpret_cast<Fn>(dlsym(library, name));
  if (slot == nullptr) {
    throw Error(ErrorCode::DeviceUnavailable, BACKPLANE_CUBLAS_SONAME, std::string("no symbol ") + name);
  }
}

CublasLibrary Load() {
  void* library = dlopen(BACKPLANE_CUBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    throw Error(ErrorCode::DeviceUnavailable, BACKPLANE_CUBLAS_SONAME,
                std::string("cannot load cuBLAS: ") + (why ? why : "dlopen failed"));
  }
  CublasLibrary lib;
  Resolve(library, "cublasCreate_v2", lib.create);
  Resolve(library, "cublasDestroy_v2", lib.destroy);
  Resolve(library, "cublasSetStream_v2", lib.set_stream);
  Resolve(library, "cublasGemmEx_64", lib.gemm_ex_64);
  Resolve(library, "cublasGetStatusString", lib.status_string);
  Resolve(library, "cublasGetStatusName", lib.status_name);
  return lib;  // the library stays loaded for the life of the process
}

}  // namespace

const CublasLibrary& CublasApi() {
  static const CublasLibrary library = Load();
  return library;
}

}  // namespace backplane::cuda
