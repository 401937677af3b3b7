// .npy and .safetensors codecs.
#include "backplane/io.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backplane/atomic_file.hpp"
#include "backplane/convert.hpp"
#include "backplane/memory_limit.hpp"
#include "backplane/error.hpp"

namespace backplane::io {
namespace {

[[noreturn]] void Fail(const std::string& path, const std::string& detail) {
  throw Error(ErrorCode::InvalidArgument, path, detail);
}

// The whole file, refused before reading when it is larger than the allocation ceiling.
std::string ReadAll(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) Fail(path, "cannot open the file");
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) Fail(path, fmt::format("cannot read the file size: {}", ec.message()));
  CheckAllocation(path, size, "reading the file");
  std::string bytes(static_cast<size_t>(size), '\0');
  if (size > 0 && !file.read(bytes.data(), static_cast<std::streamsize>(size))) Fail(path, "short read");
  return bytes;
}

void WriteAtomically(const std::string& path, const std::string& header, const void* data, size_t size) {
  WriteFileAtomically(path, {header, std::string_view(static_cast<const char*>(data), size)});
}

// ---- .npy ---------------------------------------------------------------------------------------

struct NpyType {
  DType dtype;
  const char* descr;  // little-endian form
};

// NumPy's dtypes and the two storage conventions: bf16 as 2-byte void, bool as one byte each.
constexpr NpyType kNpyTypes[] = {
    {DType::Float64, "<f8"},  {DType::Float32, "<f4"},    {DType::Float16, "<f2"},
    {DType::BFloat16, "|V2"}, {DType::Int64, "<i8"},      {DType::Int32, "<i4"},
    {DType::Int16, "<i2"},    {DType::Int8, "|i1"},       {DType::Uint64, "<u8"},
    {DType::Uint32, "<u4"},   {DType::Uint16, "<u2"},     {DType::Uint8, "|u1"},
    {DType::Bool, "|b1"},     {DType::Complex64, "<c8"},  {DType::Complex128, "<c16"},
};

int ByteWidth(DType d) { return d == DType::Bool ? 1 : DTypeBits(d) / 8; }

// Scalar byte width for byte swapping (complex numbers swap each half).
int SwapWidth(DType d) {
  if (d == DType::Complex64) return 4;
  if (d == DType::Complex128) return 8;
  return ByteWidth(d);
}

// Element count of a shape read from `path`; overflow is the file's fault, so the error names it.
int64_t ElementCount(const Shape& shape, const std::string& path, const std::string& where) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) Fail(path, fmt::format("{}: shape {} has a negative dimension", where, ShapeToString(shape)));
  }
  for (int64_t d : shape) {
    if (d == 0) return 0;
  }
  for (int64_t d : shape) {
    if (__builtin_mul_overflow(n, d, &n)) {
      Fail(path, fmt::format("{}: shape {} has more than 2^63 - 1 elements", where, ShapeToString(shape)));
    }
  }
  return n;
}

// The value of `key` in the header dict: a quoted string, True, False or a parenthesised tuple,
// scanned by hand (std::regex is slow and recurses once per matched character).
std::string HeaderValue(const std::string& header, const std::string& key, const std::string& path) {
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  for (size_t at = header.find(key); at != std::string::npos; at = header.find(key, at + 1)) {
    const size_t after = at + key.size();
    if (at == 0 || after >= header.size()) continue;
    const char open = header[at - 1], close = header[after];
    if ((open != '\'' && open != '"') || (close != '\'' && close != '"')) continue;
    size_t pos = after + 1;
    while (pos < header.size() && is_space(header[pos])) ++pos;
    if (pos >= header.size() || header[pos] != ':') continue;
    ++pos;
    while (pos < header.size() && is_space(header[pos])) ++pos;
    if (pos >= header.size()) continue;
    const char first = header[pos];
    if (first == '\'' || first == '"' || first == '(') {
      const size_t end = header.find(first == '(' ? ')' : first, pos + 1);
      if (end != std::string::npos) return header.substr(pos, end - pos + 1);
    } else {
      for (const char* word : {"True", "False"}) {
        if (header.compare(pos, std::strlen(word), word) == 0) return word;
      }
    }
  }
  Fail(path, fmt::format("npy header lacks '{}'", key));
}

// The shape tuple exactly as Python writes it: "()", "(5,)", "(2, 3)" (a trailing comma is
// allowed, whitespace around items too). Each dimension is a decimal integer <= INT64_MAX.
Shape ParseNpyShape(const std::string& text, const std::string& path) {
  auto bad = [&](const std::string& why) -> void {
    Fail(path, fmt::format("npy header 'shape' must be a tuple of non-negative integers, got {} ({})", text, why));
  };
  Shape shape;
  size_t pos = 1;  // HeaderValue matched "(...)"
  const size_t close = text.size() - 1;
  auto skip_space = [&] {
    while (pos < close && (text[pos] == ' ' || text[pos] == '\t' || text[pos] == '\n')) ++pos;
  };
  skip_space();
  while (pos < close) {
    if (text[pos] < '0' || text[pos] > '9') bad(fmt::format("'{}' at position {}", text[pos], pos));
    int64_t d = 0;
    while (pos < close && text[pos] >= '0' && text[pos] <= '9') {
      if (__builtin_mul_overflow(d, int64_t{10}, &d) || __builtin_add_overflow(d, int64_t(text[pos] - '0'), &d)) {
        bad("a dimension exceeds INT64_MAX");
      }
      ++pos;
    }
    shape.push_back(d);
    skip_space();
    if (pos < close && text[pos] == ',') {
      ++pos;
      skip_space();
    } else if (pos < close) {
      bad(fmt::format("'{}' at position {}", text[pos], pos));
    }
  }
  if (shape.size() == 1 && text.find(',') == std::string::npos) bad("a one-element tuple needs a trailing comma");
  return shape;
}

}  // namespace

Tensor ReadNpy(const std::string& path) {
  const std::string bytes = ReadAll(path);
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) Fail(path, "not a .npy file (bad magic)");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len, offset;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) Fail(path, "truncated .npy header");
    uint32_t len;
    std::memcpy(&len, bytes.data() + 8, 4);
    header_len = len;
    offset = 12;
  } else {
    Fail(path, fmt::format("unsupported .npy format version {}", major));
  }
  if (bytes.size() < offset + header_len) Fail(path, "truncated .npy header");
  const std::string header = bytes.substr(offset, header_len);
  std::string descr = HeaderValue(header, "descr", path);
  descr = descr.substr(1, descr.size() - 2);
  const bool fortran = HeaderValue(header, "fortran_order", path) == "True";
  const std::string shape_text = HeaderValue(header, "shape", path);
  const Shape shape = ParseNpyShape(shape_text, path);
  // Byte order: '<' little, '>' big, '|' and '=' native (little on supported hosts).
  const bool big = !descr.empty() && descr[0] == '>';
  std::string little = descr;
  if (!little.empty() && (little[0] == '>' || little[0] == '=')) little[0] = '<';
  if (little == "<i1" || little == "<u1" || little == "<b1") little[0] = '|';
  if (little == "<V2") little = "|V2";
  DType dtype = DType::Invalid;
  for (const NpyType& t : kNpyTypes) {
    if (little == t.descr) dtype = t.dtype;
  }
  if (dtype == DType::Invalid) Fail(path, fmt::format("unsupported .npy dtype '{}'", descr));
  const int64_t n = ElementCount(shape, path, "npy header 'shape'");
  const size_t width = static_cast<size_t>(ByteWidth(dtype));
  const std::string what = fmt::format("{}{}", DTypeName(dtype), ShapeToString(shape));
  const size_t need = CheckedMul(static_cast<uint64_t>(n), width, path, what);
  const size_t data_offset = offset + header_len;
  if (bytes.size() - data_offset < need) {
    Fail(path, fmt::format("truncated .npy data: {} bytes for shape {}, file has {}", need, ShapeToString(shape),
                           bytes.size() - data_offset));
  }
  std::string raw = bytes.substr(data_offset, need);
  if (big) {
    const size_t w = static_cast<size_t>(SwapWidth(dtype));
    for (size_t i = 0; i + w <= raw.size(); i += w) std::reverse(raw.begin() + static_cast<std::ptrdiff_t>(i), raw.begin() + static_cast<std::ptrdiff_t>(i + w));
  }
  if (fortran && shape.size() > 1) {
    // Column-major to row-major: element with index (i0..ik) sits at sum i_j * prod(shape[<j]).
    std::string c_order(raw.size(), '\0');
    std::vector<int64_t> idx(shape.size(), 0);
    for (int64_t k = 0; k < n; ++k) {
      int64_t f = 0, stride = 1;
      for (size_t d = 0; d < shape.size(); ++d) {
        f += idx[d] * stride;
        stride *= shape[d];
      }
      std::memcpy(&c_order[static_cast<size_t>(k) * width], &raw[static_cast<size_t>(f) * width], width);
      for (size_t d = shape.size(); d-- > 0;) {
        if (++idx[d] < shape[d]) break;
        idx[d] = 0;
      }
    }
    raw.swap(c_order);
  }
  Tensor t(dtype, shape);
  if (dtype == DType::Bool) {
    for (int64_t i = 0; i < n; ++i) StoreBool(t.data(), i, raw[static_cast<size_t>(i)] != 0);
  } else if (need > 0) {
    std::memcpy(t.data(), raw.data(), need);
  }
  return t;
}

void WriteNpy(const std::string& path, const Tensor& t) {
  const char* descr = nullptr;
  for (const NpyType& nt : kNpyTypes) {
    if (nt.dtype == t.dtype()) descr = nt.descr;
  }
  if (descr == nullptr) {
    Fail(path, fmt::format("dtype {} has no .npy representation (NumPy has no such type); use .safetensors "
                           "or convert it first", DTypeName(t.dtype())));
  }
  // Python tuple syntax: (), (n,), (a, b).
  const std::string shape = t.rank() == 1 ? fmt::format("({},)", t.shape()[0])
                                          : fmt::format("({})", fmt::join(t.shape(), ", "));
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr, shape);
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string prefix = "\x93NUMPY";
  prefix += '\x01';
  prefix += '\x00';
  prefix += static_cast<char>(header.size() & 0xFF);
  prefix += static_cast<char>((header.size() >> 8) & 0xFF);
  if (t.dtype() == DType::Bool) {
    std::string raw(static_cast<size_t>(t.numel()), '\0');
    for (int64_t i = 0; i < t.numel(); ++i) raw[static_cast<size_t>(i)] = LoadBool(t.data(), i) ? 1 : 0;
    WriteAtomically(path, prefix + header, raw.data(), raw.size());
  } else {
    WriteAtomically(path, prefix + header, t.data(), t.nbytes());
  }
}

// ---- .safetensors -------------------------------------------------------------------------------
namespace {

struct SafeType {
  DType dtype;
  const char* name;
};
constexpr SafeType kSafeTypes[] = {
    {DType::Float64, "F64"}, {DType::Float32, "F32"},       {DType::Float16, "F16"},
    {DType::BFloat16, "BF16"}, {DType::Float8E4M3, "F8_E4M3"}, {DType::Float8E5M2, "F8_E5M2"},
    {DType::Int64, "I64"},   {DType::Int32, "I32"},         {DType::Int16, "I16"},
    {DType::Int8, "I8"},     {DType::Uint64, "U64"},        {DType::Uint32, "U32"},
    {DType::Uint16, "U16"},  {DType::Uint8, "U8"},          {DType::Bool, "BOOL"},
    {DType::Complex64, "C64"},
};

}  // namespace

std::map<std::string, Tensor> ReadSafetensors(const std::string& path) {
  const std::string bytes = ReadAll(path);
  if (bytes.size() < 8) Fail(path, "truncated .safetensors file (no header length)");
  uint64_t header_len;
  std::memcpy(&header_len, bytes.data(), 8);
  if (header_len > bytes.size() - 8) Fail(path, fmt::format("truncated .safetensors header ({} bytes announced)", header_len));
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.substr(8, header_len));
  } catch (const nlohmann::json::exception& e) {
    Fail(path, fmt::format("malformed .safetensors header: {}", e.what()));
  }
  if (!header.is_object()) Fail(path, "malformed .safetensors header: not an object");
  const size_t data_start = 8 + header_len;
  const size_t data_size = bytes.size() - data_start;
  std::map<std::string, Tensor> out;
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") continue;
    const std::string where = fmt::format("tensor '{}'", name);
    if (!info.is_object() || !info.contains("dtype") || !info.contains("shape") || !info.contains("data_offsets")) {
      Fail(path, where + ": needs dtype, shape and data_offsets");
    }
    DType dtype = DType::Invalid;
    for (const SafeType& s : kSafeTypes) {
      if (info["dtype"] == s.name) dtype = s.dtype;
    }
    if (dtype == DType::Invalid) Fail(path, fmt::format("{}: unsupported dtype {}", where, info["dtype"].dump()));
    const auto& dims = info["shape"];
    if (!dims.is_array()) Fail(path, where + ": shape must be a list of non-negative integers");
    Shape shape;
    for (const auto& d : dims) {
      if (!d.is_number_unsigned() || d.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
        Fail(path, fmt::format("{}: shape must be a list of integers in [0, 2^63), got {}", where, dims.dump()));
      }
      shape.push_back(d.get<int64_t>());
    }
    const auto& offsets = info["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned()) {
      Fail(path, fmt::format("{}: data_offsets must be two non-negative integers, got {}", where, offsets.dump()));
    }
    const uint64_t begin = offsets[0].get<uint64_t>();
    const uint64_t end = offsets[1].get<uint64_t>();
    const int64_t n = ElementCount(shape, path, where);
    const uint64_t need = CheckedMul(static_cast<uint64_t>(n), static_cast<uint64_t>(ByteWidth(dtype)), path,
                                     fmt::format("{}: {}{}", where, DTypeName(dtype), ShapeToString(shape)));
    if (end < begin || end - begin != need) {
      Fail(path, fmt::format("{}: data_offsets [{}, {}] do not match {} bytes for {}{}", where, begin, end, need,
                             DTypeName(dtype), ShapeToString(shape)));
    }
    if (end > data_size) Fail(path, fmt::format("{}: truncated data (needs bytes up to {}, file has {})", where, end, data_size));
    Tensor t(dtype, shape);
    const char* src = bytes.data() + data_start + begin;
    if (dtype == DType::Bool) {
      for (int64_t i = 0; i < n; ++i) StoreBool(t.data(), i, src[i] != 0);
    } else if (need > 0) {
      std::memcpy(t.data(), src, need);
    }
    out.emplace(name, std::move(t));
  }
  return out;
}

void WriteSafetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  std::string data;
  for (const auto& [name, t] : tensors) {
    const char* type = nullptr;
    for (const SafeType& s : kSafeTypes) {
      if (s.dtype == t.dtype()) type = s.name;
    }
    if (type == nullptr) Fail(path, fmt::format("tensor '{}': dtype {} has no .safetensors code", name, DTypeName(t.dtype())));
    const size_t begin = data.size();
    if (t.dtype() == DType::Bool) {
      for (int64_t i = 0; i < t.numel(); ++i) data.push_back(LoadBool(t.data(), i) ? 1 : 0);
    } else {
      data.append(static_cast<const char*>(t.data()), t.nbytes());
    }
    header[name] = {{"dtype", type}, {"shape", t.shape()}, {"data_offsets", {begin, data.size()}}};
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string prefix(8, '\0');
  const uint64_t len = text.size();
  std::memcpy(prefix.data(), &len, 8);
  WriteAtomically(path, prefix + text, data.data(), data.size());
}

}  // namespace backplane::io
