// TensorProto -> Tensor: element type mapping, raw_data, typed fields and external data files.
#include "onnx/tensor_proto.hpp"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "backplane/error.hpp"
#include "backplane/memory_limit.hpp"

namespace backplane::onnx {
namespace {

using TP = ::onnx::TensorProto;

[[noreturn]] void Bad(const std::string& where, const std::string& detail) {
  throw Error(ErrorCode::InvalidArgument, "onnx", fmt::format("{}: {}", where, detail));
}

// Element count of the proto's dims; negative dims and int64 overflow are errors.
int64_t CheckedCount(const TP& proto, const std::string& where) {
  int64_t n = 1;
  for (int64_t d : proto.dims()) {
    if (d < 0) Bad(where, fmt::format("negative dimension {}", d));
    if (__builtin_mul_overflow(n, d, &n)) Bad(where, "element count overflows int64");
  }
  return n;
}

// Byte width of one element as ONNX stores it (bool: one byte).
size_t OnnxElementBytes(DType d) { return d == DType::Bool ? 1 : static_cast<size_t>(DTypeBits(d) / 8); }

// Packs `n` elements of ONNX's dense little-endian layout into `t` (bool: a byte each).
void FillFromBytes(Tensor& t, const char* bytes, int64_t n) {
  if (t.dtype() == DType::Bool) {
    for (int64_t i = 0; i < n; ++i) t.SetDouble(i, bytes[i] != 0 ? 1.0 : 0.0);
    return;
  }
  if (n > 0) std::memcpy(t.data(), bytes, t.nbytes());
}

std::string ExternalEntry(const TP& proto, const std::string& key) {
  for (const auto& e : proto.external_data()) {
    if (e.key() == key) return e.value();
  }
  return "";
}

uint64_t ParseSize(const std::string& text, const std::string& where, const std::string& key) {
  if (text.empty()) return 0;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9' || v > (std::numeric_limits<uint64_t>::max() - 9) / 10) {
      Bad(where, fmt::format("external data '{}' must be a non-negative integer, got '{}'", key, text));
    }
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

// The bytes of an EXTERNAL tensor: location relative to base_dir, offset/length within the file.
std::string ReadExternal(const TP& proto, const std::string& where, const std::string& base_dir,
                         uint64_t expected) {
  const std::string location = ExternalEntry(proto, "location");
  if (location.empty()) Bad(where, "external data without a 'location' entry");
  const std::filesystem::path rel(location);
  if (rel.is_absolute()) Bad(where, fmt::format("external data location '{}' must be relative", location));
  for (const auto& part : rel) {
    if (part == "..") Bad(where, fmt::format("external data location '{}' must not contain '..'", location));
  }
  const std::filesystem::path path = std::filesystem::path(base_dir) / rel;
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) Bad(where, fmt::format("external data file '{}' cannot be read: {}", path.string(), ec.message()));
  const uint64_t offset = ParseSize(ExternalEntry(proto, "offset"), where, "offset");
  const std::string length_text = ExternalEntry(proto, "length");
  const uint64_t length = length_text.empty() ? (offset <= size ? size - offset : 0)
                                              : ParseSize(length_text, where, "length");
  if (offset > size || length > size - offset) {
    Bad(where, fmt::format("external data offset {} + length {} exceeds the {} bytes of '{}'", offset,
                           length, size, path.string()));
  }
  if (length != expected) {
    Bad(where, fmt::format("external data length {} must be {} (shape x element size)", length, expected));
  }
  CheckAllocation("onnx", length, fmt::format("{}: external data", where));
  std::ifstream in(path, std::ios::binary);
  std::string bytes(static_cast<size_t>(length), '\0');
  in.seekg(static_cast<std::streamoff>(offset));
  if (!in.read(bytes.data(), static_cast<std::streamsize>(length))) {
    Bad(where, fmt::format("short read of external data '{}'", path.string()));
  }
  return bytes;
}

template <class Field>
void CheckFieldCount(const Field& field, int64_t expected, const std::string& where, const char* name) {
  if (static_cast<int64_t>(field.size()) != expected) {
    Bad(where, fmt::format("{} holds {} values, the shape needs {}", name, field.size(), expected));
  }
}

}  // namespace

std::optional<DType> DTypeFromOnnx(int32_t elem_type) {
  switch (elem_type) {
    case TP::FLOAT: return DType::Float32;
    case TP::UINT8: return DType::Uint8;
    case TP::INT8: return DType::Int8;
    case TP::UINT16: return DType::Uint16;
    case TP::INT16: return DType::Int16;
    case TP::INT32: return DType::Int32;
    case TP::INT64: return DType::Int64;
    case TP::BOOL: return DType::Bool;
    case TP::FLOAT16: return DType::Float16;
    case TP::DOUBLE: return DType::Float64;
    case TP::UINT32: return DType::Uint32;
    case TP::UINT64: return DType::Uint64;
    case TP::COMPLEX64: return DType::Complex64;
    case TP::COMPLEX128: return DType::Complex128;
    case TP::BFLOAT16: return DType::BFloat16;
    default: return std::nullopt;
  }
}

std::string OnnxTypeName(int32_t elem_type) {
  if (TP::DataType_IsValid(elem_type)) return TP::DataType_Name(static_cast<TP::DataType>(elem_type));
  return std::to_string(elem_type);
}

std::string ReadFileBytes(const std::string& path, const std::string& what, uint64_t max_bytes) {
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) throw Error(ErrorCode::InvalidArgument, "onnx", fmt::format("{} '{}' cannot be read: {}", what, path, ec.message()));
  if (size > max_bytes) {
    throw Error(ErrorCode::InvalidArgument, "onnx",
                fmt::format("{} '{}' is {} bytes, more than the {} allowed", what, path, size, max_bytes));
  }
  CheckAllocation("onnx", size, fmt::format("reading {} '{}'", what, path));
  std::ifstream in(path, std::ios::binary);
  std::string bytes(static_cast<size_t>(size), '\0');
  if (!in.read(bytes.data(), static_cast<std::streamsize>(size))) {
    throw Error(ErrorCode::InvalidArgument, "onnx", fmt::format("short read of {} '{}'", what, path));
  }
  return bytes;
}

Tensor TensorFromProto(const TP& proto, const std::string& where, const std::string& base_dir) {
  const auto dtype = DTypeFromOnnx(proto.data_type());
  if (!dtype) {
    throw Error(ErrorCode::NotImplemented, "onnx",
                fmt::format("{}: element type {} is not supported", where, OnnxTypeName(proto.data_type())));
  }
  if (proto.has_segment()) Bad(where, "segmented tensors are not supported");
  const int64_t n = CheckedCount(proto, where);
  const size_t width = OnnxElementBytes(*dtype);
  uint64_t expected_bytes = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(n), width, &expected_bytes)) Bad(where, "byte size overflows");
  Shape shape(proto.dims().begin(), proto.dims().end());
  if (proto.data_location() == TP::EXTERNAL) {
    const std::string bytes = ReadExternal(proto, where, base_dir, expected_bytes);
    Tensor t(*dtype, shape);
    FillFromBytes(t, bytes.data(), n);
    return t;
  }
  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != expected_bytes) {
      Bad(where, fmt::format("raw_data has {} bytes, shape {} of {} needs {}", proto.raw_data().size(),
                             ShapeToString(shape), DTypeName(*dtype), expected_bytes));
    }
    Tensor t(*dtype, shape);
    FillFromBytes(t, proto.raw_data().data(), n);
    return t;
  }
  // Typed fields: check the count before allocating.
  switch (*dtype) {
    case DType::Float32: CheckFieldCount(proto.float_data(), n, where, "float_data"); break;
    case DType::Complex64: CheckFieldCount(proto.float_data(), 2 * n, where, "float_data"); break;
    case DType::Float64: CheckFieldCount(proto.double_data(), n, where, "double_data"); break;
    case DType::Complex128: CheckFieldCount(proto.double_data(), 2 * n, where, "double_data"); break;
    case DType::Int64: CheckFieldCount(proto.int64_data(), n, where, "int64_data"); break;
    case DType::Uint32:
    case DType::Uint64: CheckFieldCount(proto.uint64_data(), n, where, "uint64_data"); break;
    default: CheckFieldCount(proto.int32_data(), n, where, "int32_data"); break;
  }
  Tensor t(*dtype, shape);
  for (int64_t i = 0; i < n; ++i) {
    const int k = static_cast<int>(i);
    switch (*dtype) {
      case DType::Float32: t.data_as<float>()[i] = proto.float_data(k); break;
      case DType::Complex64:
        t.data_as<float>()[2 * i] = proto.float_data(2 * k);
        t.data_as<float>()[2 * i + 1] = proto.float_data(2 * k + 1);
        break;
      case DType::Float64: t.data_as<double>()[i] = proto.double_data(k); break;
      case DType::Complex128:
        t.data_as<double>()[2 * i] = proto.double_data(2 * k);
        t.data_as<double>()[2 * i + 1] = proto.double_data(2 * k + 1);
        break;
      case DType::Int64: t.data_as<int64_t>()[i] = proto.int64_data(k); break;
      case DType::Uint64: t.data_as<uint64_t>()[i] = proto.uint64_data(k); break;
      case DType::Uint32: t.data_as<uint32_t>()[i] = static_cast<uint32_t>(proto.uint64_data(k)); break;
      case DType::Int32: t.data_as<int32_t>()[i] = proto.int32_data(k); break;
      case DType::Int16: t.data_as<int16_t>()[i] = static_cast<int16_t>(proto.int32_data(k)); break;
      case DType::Int8: t.data_as<int8_t>()[i] = static_cast<int8_t>(proto.int32_data(k)); break;
      case DType::Uint16: t.data_as<uint16_t>()[i] = static_cast<uint16_t>(proto.int32_data(k)); break;
      case DType::Uint8: t.data_as<uint8_t>()[i] = static_cast<uint8_t>(proto.int32_data(k)); break;
      // f16 / bf16 are stored as their bit patterns in int32_data.
      case DType::Float16:
      case DType::BFloat16: t.data_as<uint16_t>()[i] = static_cast<uint16_t>(proto.int32_data(k)); break;
      case DType::Bool: t.SetDouble(i, proto.int32_data(k) != 0 ? 1.0 : 0.0); break;
      default: Bad(where, fmt::format("dtype {} has no typed field", DTypeName(*dtype)));
    }
  }
  return t;
}

}  // namespace backplane::onnx
