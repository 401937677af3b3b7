// backplane.Tensor: conversion from and to NumPy/DLPack without copies where the layouts agree.
#include <fmt/format.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <atomic>
#include <cstring>
#include <memory>

#include "backplane/convert.hpp"
#include "backplane/error.hpp"
#include "bindings.hpp"

namespace backplane::python {
namespace {

// The element type DLPack names for a Backplane dtype whose bytes it can describe as they are.
bool DlpackDType(DType d, nb::dlpack::dtype& out) {
  using Code = nb::dlpack::dtype_code;
  auto set = [&](Code code, int bits) {
    out = nb::dlpack::dtype{static_cast<uint8_t>(code), static_cast<uint8_t>(bits), 1};
    return true;
  };
  switch (d) {
    case DType::Float64: return set(Code::Float, 64);
    case DType::Float32: return set(Code::Float, 32);
    case DType::Float16: return set(Code::Float, 16);
    case DType::BFloat16: return set(Code::Bfloat, 16);
    case DType::Int64: return set(Code::Int, 64);
    case DType::Int32: return set(Code::Int, 32);
    case DType::Int16: return set(Code::Int, 16);
    case DType::Int8: return set(Code::Int, 8);
    case DType::Uint64: return set(Code::UInt, 64);
    case DType::Uint32: return set(Code::UInt, 32);
    case DType::Uint16: return set(Code::UInt, 16);
    case DType::Uint8: return set(Code::UInt, 8);
    case DType::Complex64: return set(Code::Complex, 64);
    case DType::Complex128: return set(Code::Complex, 128);
    default: return false;  // fp8 (no DLPack code here), bool and int4 (packed bits)
  }
}

DType FromDlpack(nb::dlpack::dtype dt, const std::string& override_name) {
  using Code = nb::dlpack::dtype_code;
  const auto code = static_cast<Code>(dt.code);
  if (dt.lanes != 1) ThrowInvalidArgument("backplane.Tensor", "array", "one lane per element", std::to_string(dt.lanes));
  if (!override_name.empty()) {
    const std::optional<DType> d = DTypeFromName(override_name);
    if (!d) ThrowInvalidArgument("backplane.Tensor", "dtype", "a Backplane dtype name", "'" + override_name + "'");
    if (*d == DType::Int4) {
      if (code != Code::Int || dt.bits != 8) {
        ThrowInvalidArgument("backplane.Tensor", "array", "an int8 array for i4", fmt::format("code {} with {} bits", dt.code, dt.bits));
      }
      return *d;
    }
    if (code != Code::UInt || dt.bits != DTypeBits(*d)) {
      ThrowInvalidArgument("backplane.Tensor", "array", fmt::format("a uint{} view for {}", DTypeBits(*d), override_name),
                           fmt::format("code {} with {} bits", dt.code, dt.bits));
    }
    return *d;
  }
  switch (code) {
    case Code::Float:
      if (dt.bits == 64) return DType::Float64;
      if (dt.bits == 32) return DType::Float32;
      if (dt.bits == 16) return DType::Float16;
      break;
    case Code::Bfloat:
      if (dt.bits == 16) return DType::BFloat16;
      break;
    case Code::Int:
      if (dt.bits == 64) return DType::Int64;
      if (dt.bits == 32) return DType::Int32;
      if (dt.bits == 16) return DType::Int16;
      if (dt.bits == 8) return DType::Int8;
      break;
    case Code::UInt:
      if (dt.bits == 64) return DType::Uint64;
      if (dt.bits == 32) return DType::Uint32;
      if (dt.bits == 16) return DType::Uint16;
      if (dt.bits == 8) return DType::Uint8;
      break;
    case Code::Complex:
      if (dt.bits == 64) return DType::Complex64;
      if (dt.bits == 128) return DType::Complex128;
      break;
    case Code::Bool:
      if (dt.bits == 8) return DType::Bool;
      break;
  }
  throw Error(ErrorCode::UnsupportedDType, "backplane.Tensor",
              fmt::format("array element type (DLPack code {}, {} bits) has no Backplane dtype", dt.code, dt.bits));
}

using ArrayRef = nb::ndarray<nb::ro, nb::device::cpu>;

// Imports that had to copy (strided, misaligned, bool): tests check that the others do not.
std::atomic<int64_t> conversion_copies{0};

// Releases the Python owner of borrowed memory; the last Tensor may die on any thread.
void ReleaseOwner(ArrayRef* owner) {
  if (!Py_IsInitialized()) return;  // interpreter gone: the memory went with it
  nb::gil_scoped_acquire gil;
  delete owner;
}

bool IsCContiguous(const ArrayRef& a) {
  int64_t expected = 1;
  for (size_t i = a.ndim(); i-- > 0;) {
    if (a.shape(i) != 1 && a.stride(i) != expected) return false;
    expected *= static_cast<int64_t>(a.shape(i));
  }
  return true;
}

// Element-by-element copy of a strided array of `itemsize`-byte elements into `out`.
void CopyStrided(const ArrayRef& a, size_t itemsize, DType dtype, Tensor& out) {
  const size_t ndim = a.ndim();
  std::vector<int64_t> index(ndim, 0);
  const auto* base = static_cast<const std::byte*>(static_cast<const void*>(a.data()));
  auto* dst = static_cast<std::byte*>(out.data());
  for (int64_t k = 0; k < out.numel(); ++k) {
    int64_t offset = 0;
    for (size_t i = 0; i < ndim; ++i) offset += index[i] * a.stride(i);
    const std::byte* src = base + offset * static_cast<int64_t>(itemsize);
    if (dtype == DType::Bool) {
      StoreBool(dst, k, *reinterpret_cast<const uint8_t*>(src) != 0);
    } else if (dtype == DType::Int4) {
      const int v = *reinterpret_cast<const int8_t*>(src);
      if (v < -8 || v > 7) ThrowInvalidArgument("backplane.Tensor", "array", "int4 values in [-8, 7]", std::to_string(v));
      StoreInt4(dst, k, v);
    } else {
      std::memcpy(dst + static_cast<size_t>(k) * itemsize, src, itemsize);
    }
    for (size_t i = ndim; i-- > 0;) {
      if (++index[i] < static_cast<int64_t>(a.shape(i))) break;
      index[i] = 0;
    }
  }
}

nb::capsule OwnerOf(const Tensor& t) {
  return nb::capsule(new Tensor(t), [](void* p) noexcept { delete static_cast<Tensor*>(p); });
}

std::vector<size_t> ShapeOf(const Tensor& t) { return {t.shape().begin(), t.shape().end()}; }

// bool and int4 as one byte per element (NumPy's bool and int8), in a new buffer.
Tensor Unpacked(const Tensor& t) {
  Tensor out(t.dtype() == DType::Bool ? DType::Uint8 : DType::Int8, t.shape());
  const void* src = t.data();
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (t.dtype() == DType::Bool) {
      out.data_as<uint8_t>()[i] = LoadBool(src, i) ? 1 : 0;
    } else {
      out.data_as<int8_t>()[i] = LoadInt4(src, i);
    }
  }
  return out;
}

// An nb::ndarray of framework F over the host tensor's bytes; bool/int4 are unpacked first.
template <class... F>
nb::ndarray<F...> ArrayOver(const Tensor& host, bool numpy_layout) {
  Tensor t = host;
  nb::dlpack::dtype dt{};
  if (t.dtype() == DType::Bool || t.dtype() == DType::Int4) {
    t = Unpacked(host);
    DlpackDType(t.dtype(), dt);
    if (host.dtype() == DType::Bool) dt.code = static_cast<uint8_t>(nb::dlpack::dtype_code::Bool);
  } else if (numpy_layout && t.dtype() == DType::BFloat16) {
    dt = nb::dlpack::dtype{static_cast<uint8_t>(nb::dlpack::dtype_code::UInt), 16, 1};
  } else if (!DlpackDType(t.dtype(), dt)) {
    if (!numpy_layout) {
      throw Error(ErrorCode::UnsupportedDType, "backplane.Tensor.__dlpack__",
                  fmt::format("{} has no DLPack type here; use .numpy() (ml_dtypes)", DTypeName(t.dtype())));
    }
    dt = nb::dlpack::dtype{static_cast<uint8_t>(nb::dlpack::dtype_code::UInt), 8, 1};
  }
  const std::vector<size_t> shape = ShapeOf(t);
  void* data = t.numel() == 0 ? nullptr : t.data();
  return nb::ndarray<F...>(data, shape.size(), shape.data(), OwnerOf(t), nullptr, dt);
}

const char* BufferFormat(DType d) {
  switch (d) {
    case DType::Float64: return "d";
    case DType::Float32: return "f";
    case DType::Float16: return "e";
    case DType::Int64: return "q";
    case DType::Int32: return "i";
    case DType::Int16: return "h";
    case DType::Int8: return "b";
    case DType::Uint64: return "Q";
    case DType::Uint32: return "I";
    case DType::Uint16: return "H";
    case DType::Uint8: return "B";
    case DType::Complex64: return "Zf";
    case DType::Complex128: return "Zd";
    default: return nullptr;
  }
}

// Buffer protocol export: the tensor's own bytes, for dtypes the struct module can name.
struct BufferInfo {
  Tensor tensor;
  std::vector<Py_ssize_t> shape, strides;
};

int GetBuffer(PyObject* self, Py_buffer* view, int flags) {
  Tensor* t = nb::inst_ptr<Tensor>(self);
  const char* format = BufferFormat(t->dtype());
  if (!t->on_host() || format == nullptr) {
    PyErr_SetString(PyExc_BufferError,
                    fmt::format("backplane.Tensor: argument 'self' must be a host tensor of a dtype the buffer protocol "
                                "names, got {} on {}; use .numpy()", DTypeName(t->dtype()), DeviceName(t->device())).c_str());
    view->obj = nullptr;
    return -1;
  }
  auto* info = new BufferInfo{*t, {}, {}};
  const auto itemsize = static_cast<Py_ssize_t>(DTypeBits(t->dtype()) / 8);
  Py_ssize_t stride = itemsize;
  info->shape.assign(t->shape().begin(), t->shape().end());
  info->strides.resize(info->shape.size());
  for (size_t i = info->shape.size(); i-- > 0;) {
    info->strides[i] = stride;
    stride *= info->shape[i];
  }
  static char empty = 0;
  view->buf = t->numel() == 0 || t->data() == nullptr ? static_cast<void*>(&empty) : t->data();
  view->obj = self;
  Py_INCREF(self);
  view->len = static_cast<Py_ssize_t>(t->numel()) * itemsize;
  view->readonly = 0;
  view->itemsize = itemsize;
  view->format = (flags & PyBUF_FORMAT) != 0 ? const_cast<char*>(format) : nullptr;
  view->ndim = static_cast<int>(info->shape.size());
  view->shape = (flags & PyBUF_ND) != 0 ? info->shape.data() : nullptr;
  view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? info->strides.data() : nullptr;
  view->suboffsets = nullptr;
  view->internal = info;
  return 0;
}

void ReleaseBuffer(PyObject*, Py_buffer* view) { delete static_cast<BufferInfo*>(view->internal); }

PyType_Slot kTensorSlots[] = {{Py_bf_getbuffer, reinterpret_cast<void*>(GetBuffer)},
                              {Py_bf_releasebuffer, reinterpret_cast<void*>(ReleaseBuffer)},
                              {0, nullptr}};

std::string Repr(const Tensor& t) {
  return fmt::format("backplane.Tensor({}{}, device='{}')", DTypeName(t.dtype()), ShapeToString(t.shape()),
                     DeviceName(t.device()));
}

}  // namespace

Tensor ToTensor(nb::handle obj, const std::string& dtype) {
  if (nb::isinstance<Tensor>(obj)) {
    if (!dtype.empty()) ThrowInvalidArgument("backplane.Tensor", "dtype", "no override for a backplane.Tensor", dtype);
    return nb::cast<Tensor>(obj);
  }
  ArrayRef a;
  if (!nb::try_cast(obj, a, /*convert=*/false)) {
    throw Error(ErrorCode::UnsupportedDType, "backplane.Tensor",
                fmt::format("argument must be a backplane.Tensor or a CPU array with the buffer protocol or "
                            "__dlpack__ (NumPy, PyTorch), got {}",
                            nb::cast<std::string>(nb::str(obj.type()))));
  }
  const DType d = FromDlpack(a.dtype(), dtype);
  Shape shape;
  for (size_t i = 0; i < a.ndim(); ++i) shape.push_back(static_cast<int64_t>(a.shape(i)));
  const size_t itemsize = (a.dtype().bits + 7) / 8;
  const void* data = a.data();
  const bool aligned = reinterpret_cast<uintptr_t>(data) % itemsize == 0;
  if (d != DType::Bool && d != DType::Int4 && aligned && IsCContiguous(a)) {
    auto* owner = new ArrayRef(a);
    std::shared_ptr<std::byte[]> storage(static_cast<std::byte*>(const_cast<void*>(data)),
                                         [owner](std::byte*) { ReleaseOwner(owner); });
    return Tensor::FromHostStorage(d, std::move(shape), std::move(storage));
  }
  Tensor out(d, shape);
  ++conversion_copies;
  if (out.numel() > 0) CopyStrided(a, itemsize, d, out);
  return out;
}

nb::object ToNumpy(const Tensor& tensor) {
  const Tensor host = tensor.ToHost();
  nb::object arr = nb::cast(ArrayOver<nb::numpy>(host, /*numpy_layout=*/true));
  const char* ml_name = nullptr;
  switch (host.dtype()) {
    case DType::BFloat16: ml_name = "bfloat16"; break;
    case DType::Float8E4M3: ml_name = "float8_e4m3fn"; break;
    case DType::Float8E5M2: ml_name = "float8_e5m2"; break;
    default: break;
  }
  if (ml_name == nullptr) return arr;
  nb::module_ ml = nb::module_::import_("ml_dtypes");
  return arr.attr("view")(ml.attr(ml_name));
}

void BindTensor(nb::module_& m) {
  nb::class_<Tensor> cls(m, "Tensor", nb::type_slots(kTensorSlots),
                         "A Backplane tensor: dtype, shape, device and shared row-major storage.");
  cls.def("__init__",
          [](Tensor* self, const std::string& dtype, const std::vector<int64_t>& shape) {
            const std::optional<DType> d = DTypeFromName(dtype);
            if (!d) ThrowInvalidArgument("backplane.Tensor", "dtype", "a Backplane dtype name such as 'f32'", "'" + dtype + "'");
            new (self) Tensor(*d, shape);
          },
          nb::arg("dtype"), nb::arg("shape"), "A zero-filled host tensor.")
      .def_static("from_numpy", [](nb::handle a, const std::string& dtype) { return ToTensor(a, dtype); },
                  nb::arg("array"), nb::arg("dtype") = "",
                  "Shares the memory of a contiguous, aligned array (copies once otherwise).")
      .def_static("from_dlpack", [](nb::handle a) { return ToTensor(a); }, nb::arg("obj"),
                  "Shares the memory of a CPU object with __dlpack__ (e.g. a torch.Tensor).")
      .def_prop_ro("dtype", [](const Tensor& t) { return std::string(DTypeName(t.dtype())); })
      .def_prop_ro("shape", [](const Tensor& t) {
        nb::list dims;
        for (int64_t d : t.shape()) dims.append(d);
        return nb::tuple(dims);
      })
      .def_prop_ro("ndim", &Tensor::rank)
      .def_prop_ro("size", &Tensor::numel)
      .def_prop_ro("nbytes", &Tensor::nbytes)
      .def_prop_ro("device", [](const Tensor& t) { return DeviceName(t.device()); })
      .def_prop_ro("data_ptr", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.data()); },
                   "Address of the first element (host tensors).")
      .def("numpy", &ToNumpy, "A NumPy array on the same memory (bool and int4 are unpacked into a copy).")
      .def("__array__",
           [](const Tensor& t, nb::handle dtype, nb::handle copy) {
             nb::object a = ToNumpy(t);
             if (!dtype.is_none()) a = a.attr("astype")(dtype);
             if (!copy.is_none() && nb::cast<bool>(copy)) a = a.attr("copy")();
             return a;
           },
           nb::arg("dtype") = nb::none(), nb::arg("copy") = nb::none())
      .def("__dlpack__",
           [](const Tensor& t, nb::handle stream, nb::handle, nb::handle, nb::handle) {
             if (!stream.is_none() && !nb::isinstance<nb::int_>(stream)) {
               ThrowInvalidArgument("backplane.Tensor.__dlpack__", "stream", "None for a CPU tensor", "another value");
             }
             // An ndarray without a framework casts to the DLPack capsule itself.
             return nb::cast(ArrayOver<>(t.ToHost(), /*numpy_layout=*/false));
           },
           nb::arg("stream") = nb::none(), nb::arg("max_version") = nb::none(), nb::arg("dl_device") = nb::none(),
           nb::arg("copy") = nb::none())
      .def("__dlpack_device__", [](const Tensor& t) {
        if (!t.on_host()) ThrowNotImplemented("backplane.Tensor.__dlpack_device__", DeviceName(t.device()));
        return nb::make_tuple(1, 0);  // kDLCPU
      })
      .def("clone", &Tensor::Clone, "A copy with its own storage.")
      .def("shares_memory_with", &Tensor::SharesStorageWith, nb::arg("other"))
      .def("reshape", [](const Tensor& t, const std::vector<int64_t>& shape) { return t.Reshaped(shape); },
           nb::arg("shape"), "Same storage, new shape.")
      .def("__len__", [](const Tensor& t) {
        if (t.rank() == 0) ThrowInvalidArgument("backplane.Tensor.__len__", "self", "a tensor of rank >= 1", "rank 0");
        return t.shape()[0];
      })
      .def("__repr__", &Repr);
  m.def("conversion_copies", [] { return conversion_copies.load(); },
        "How many array imports copied (strided, misaligned or bool arrays) in this process.");
  m.def("dtypes", [] {
    std::vector<std::string> names;
    for (DType d : AllDTypes()) names.emplace_back(DTypeName(d));
    return names;
  }, "Backplane's dtype names, in enum order.");
}

}  // namespace backplane::python
