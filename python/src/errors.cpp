// Backplane errors as Python exceptions with the same one-line message.
#include <nanobind/stl/string.h>

#include "backplane/error.hpp"
#include "bindings.hpp"

namespace backplane::python {

void BindErrors(nb::module_& m) {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Error& e) {
      PyObject* type = PyExc_RuntimeError;
      switch (e.code()) {
        case ErrorCode::InvalidArgument:
        case ErrorCode::ShapeMismatch: type = PyExc_ValueError; break;
        case ErrorCode::UnsupportedDType: type = PyExc_TypeError; break;
        case ErrorCode::NotImplemented: type = PyExc_NotImplementedError; break;  // a RuntimeError
        case ErrorCode::OutOfMemory: type = PyExc_MemoryError; break;
        case ErrorCode::DeviceUnavailable:
        case ErrorCode::Internal: type = PyExc_RuntimeError; break;
      }
      PyErr_SetString(type, e.what());
    }
  });
  m.def("_raise", [](const std::string& code, const std::string& op, const std::string& detail) {
    for (ErrorCode c : {ErrorCode::InvalidArgument, ErrorCode::UnsupportedDType, ErrorCode::ShapeMismatch,
                        ErrorCode::NotImplemented, ErrorCode::DeviceUnavailable, ErrorCode::OutOfMemory,
                        ErrorCode::Internal}) {
      if (ErrorCodeName(c) == code) throw Error(c, op, detail);
    }
    throw Error(ErrorCode::InvalidArgument, "_raise", "unknown code " + code);
  }, "Raises a Backplane error of the given code (for tests of the error mapping).");
}

}  // namespace backplane::python
