// GGUF reader (ggml's docs/gguf.md). Decisions the spec leaves open:
// - Integer arrays keep unsigned element types in `uints`, signed ones in `ints`; bools in `uints`.
// - A bool byte other than 0 or 1 is rejected.
// - Zero-sized dims are allowed (ggml allows them): such a tensor has 0 bytes and overlaps nothing.
// - Tensors may come in any order and with gaps; each offset is a multiple of the alignment.
// - general.alignment must be a u32 (as ggml and gguf-py require).
// - The data section (the end of the tensor infos padded to the alignment) lies inside the file.

#include "backplane/gguf.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <limits>
#include <map>
#include <numeric>
#include <system_error>
#include <type_traits>
#include <utility>

#include "backplane/error.hpp"

namespace backplane::gguf {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr uint64_t kDefaultAlignment = 32;
constexpr uint32_t kMaxDims = 4;  // GGML_MAX_DIMS
constexpr int kMaxArrayDepth = 16;
constexpr uint64_t kInt64Max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
// Smallest encodings: a kv is a key length (8), a value type (4) and a 1-byte value; a tensor
// info is a name length (8), n_dims (4), a type (4) and an offset (8).
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;
constexpr uint32_t kLastValueType = static_cast<uint32_t>(ValueType::Float64);

[[noreturn]] void Fail(const std::string& path, std::string_view field, std::string_view what) {
  throw Error(ErrorCode::InvalidArgument, path, fmt::format("{}: {}", field, what));
}

// A name from the file, quoted for a one-line message: control bytes escaped, long names cut.
std::string Quote(std::string_view name) {
  constexpr size_t kMaxShown = 120;
  std::string out = "'";
  for (size_t k = 0; k < name.size() && k < kMaxShown; ++k) {
    const auto c = static_cast<unsigned char>(name[k]);
    if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  out += name.size() > kMaxShown ? fmt::format("...' ({} bytes)", name.size()) : "'";
  return out;
}

// A default-constructed File has no state; every accessor checks.
template <class StatePtr>
const auto& Checked(const StatePtr& state) {
  if (!state) throw Error(ErrorCode::InvalidArgument, "gguf::File", "used before File::Open");
  return *state;
}

std::string SystemMessage(int err) {
  return std::error_code(err, std::generic_category()).message();
}

// Bytes of one fixed-size value; 0 for strings and arrays.
uint64_t FixedSize(ValueType type) {
  switch (type) {
    case ValueType::Uint8:
    case ValueType::Int8:
    case ValueType::Bool:
      return 1;
    case ValueType::Uint16:
    case ValueType::Int16:
      return 2;
    case ValueType::Uint32:
    case ValueType::Int32:
    case ValueType::Float32:
      return 4;
    case ValueType::Uint64:
    case ValueType::Int64:
    case ValueType::Float64:
      return 8;
    case ValueType::String:
    case ValueType::Array:
      return 0;
  }
  return 0;
}

// Smallest encoding of one value: a string is at least its u64 length, an array its element
// type and count.
uint64_t MinEncodedSize(ValueType type) {
  if (type == ValueType::String) return 8;
  if (type == ValueType::Array) return 4 + 8;
  return FixedSize(type);
}

bool IsUnsigned(ValueType t) {
  return t == ValueType::Uint8 || t == ValueType::Uint16 || t == ValueType::Uint32 ||
         t == ValueType::Uint64;
}
bool IsSigned(ValueType t) {
  return t == ValueType::Int8 || t == ValueType::Int16 || t == ValueType::Int32 ||
         t == ValueType::Int64;
}
bool IsInteger(ValueType t) { return IsUnsigned(t) || IsSigned(t); }
bool IsFloat(ValueType t) { return t == ValueType::Float32 || t == ValueType::Float64; }

std::string TypeText(const Value& v) {
  if (v.type != ValueType::Array) return std::string(ValueTypeName(v.type));
  return fmt::format("array of {}", ValueTypeName(v.element_type));
}

// A field name given as text or as a callable that builds it (only on error).
template <class Field>
std::string FieldText(const Field& field) {
  if constexpr (std::is_invocable_v<const Field&>) {
    return field();
  } else {
    return std::string(field);
  }
}

// Little-endian cursor over the mapped file; every read is checked against the file's end.
class Reader {
 public:
  Reader(const std::string& path, const uint8_t* data, uint64_t size)
      : path_(path), data_(data), size_(size) {}

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }
  const std::string& path() const { return path_; }

  template <class Field>
  void Need(uint64_t bytes, const Field& field) const {
    if (bytes > remaining()) {
      Fail(
          path_, FieldText(field),
          fmt::format("needs {} bytes at offset {}, but the file is {} bytes", bytes, pos_, size_));
    }
  }

  template <class T, class Field>
  T Read(const Field& field) {
    static_assert(std::is_integral_v<T> || std::is_floating_point_v<T>);
    using Bits = std::conditional_t<
        sizeof(T) == 1, uint8_t,
        std::conditional_t<sizeof(T) == 2, uint16_t,
                           std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
    Need(sizeof(T), field);
    Bits bits = 0;
    for (size_t k = 0; k < sizeof(T); ++k) {
      bits |= static_cast<Bits>(Bits{data_[pos_ + k]} << (8 * k));
    }
    pos_ += sizeof(T);
    return std::bit_cast<T>(bits);
  }

  template <class Field>
  std::string ReadString(const Field& field) {
    const uint64_t length = Read<uint64_t>(field);
    if (length > remaining()) {
      Fail(path_, FieldText(field),
           fmt::format("string length {} at offset {} runs past the end of the file ({} bytes)",
                       length, pos_ - 8, size_));
    }
    std::string out(reinterpret_cast<const char*>(data_ + pos_), static_cast<size_t>(length));
    pos_ += length;
    return out;
  }

 private:
  const std::string& path_;
  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

template <class Field>
ValueType ReadValueType(Reader& r, const Field& field) {
  const uint32_t raw = r.Read<uint32_t>(field);
  if (raw > kLastValueType) {
    Fail(r.path(), FieldText(field),
         fmt::format("value type {} is not a GGUF value type (0..{})", raw, kLastValueType));
  }
  return static_cast<ValueType>(raw);
}

void SetUnsigned(Value& v, uint64_t x) {
  v.u = x;
  if (x <= kInt64Max) v.i = static_cast<int64_t>(x);
}
void SetSigned(Value& v, int64_t x) {
  v.i = x;
  if (x >= 0) v.u = static_cast<uint64_t>(x);
}

template <class Field>
bool ReadBool(Reader& r, const Field& field) {
  const uint8_t byte = r.Read<uint8_t>(field);
  if (byte > 1) {
    Fail(r.path(), FieldText(field), fmt::format("bool must be 0 or 1, got {}", byte));
  }
  return byte == 1;
}

// Reads a fixed-size value as a widened integer or double (the caller picks by type).
template <class Field>
void ReadScalar(Reader& r, ValueType type, Value& v, const Field& field) {
  switch (type) {
    case ValueType::Uint8:
      SetUnsigned(v, r.Read<uint8_t>(field));
      break;
    case ValueType::Uint16:
      SetUnsigned(v, r.Read<uint16_t>(field));
      break;
    case ValueType::Uint32:
      SetUnsigned(v, r.Read<uint32_t>(field));
      break;
    case ValueType::Uint64:
      SetUnsigned(v, r.Read<uint64_t>(field));
      break;
    case ValueType::Int8:
      SetSigned(v, r.Read<int8_t>(field));
      break;
    case ValueType::Int16:
      SetSigned(v, r.Read<int16_t>(field));
      break;
    case ValueType::Int32:
      SetSigned(v, r.Read<int32_t>(field));
      break;
    case ValueType::Int64:
      SetSigned(v, r.Read<int64_t>(field));
      break;
    case ValueType::Float32:
      v.f = r.Read<float>(field);
      break;
    case ValueType::Float64:
      v.f = r.Read<double>(field);
      break;
    case ValueType::Bool:
      v.b = ReadBool(r, field);
      break;
    case ValueType::String:
    case ValueType::Array:
      break;  // not fixed-size; handled by the callers
  }
}

Value ReadArray(Reader& r, const std::string& field, int depth);

Value ReadValue(Reader& r, ValueType type, const std::string& field, int depth) {
  if (type == ValueType::Array) return ReadArray(r, field, depth);
  Value v;
  v.type = type;
  if (type == ValueType::String) {
    v.str = r.ReadString(field);
  } else {
    ReadScalar(r, type, v, field);
  }
  return v;
}

Value ReadArray(Reader& r, const std::string& field, int depth) {
  if (depth >= kMaxArrayDepth) {
    Fail(r.path(), field, fmt::format("arrays nested deeper than {} levels", kMaxArrayDepth));
  }
  Value v;
  v.type = ValueType::Array;
  v.element_type = ReadValueType(r, [&] { return field + " element type"; });
  const uint64_t count = r.Read<uint64_t>([&] { return field + " array count"; });
  const uint64_t min_bytes = MinEncodedSize(v.element_type);
  if (count > r.remaining() / min_bytes) {
    Fail(r.path(), field,
         fmt::format("array of {} {} needs at least {} bytes each, but only {} bytes are left in "
                     "the file at offset {}",
                     count, ValueTypeName(v.element_type), min_bytes, r.remaining(), r.pos()));
  }
  v.array_size = count;
  const size_t n = static_cast<size_t>(count);
  auto element = [&](size_t index) {
    return [&field, index] { return fmt::format("{}[{}]", field, index); };
  };
  const ValueType et = v.element_type;
  if (et == ValueType::String) {
    v.strings.reserve(n);
    for (size_t k = 0; k < n; ++k) v.strings.push_back(r.ReadString(element(k)));
  } else if (et == ValueType::Array) {
    v.arrays.reserve(n);
    for (size_t k = 0; k < n; ++k) {
      v.arrays.push_back(ReadArray(r, fmt::format("{}[{}]", field, k), depth + 1));
    }
  } else if (IsFloat(et)) {
    v.floats.resize(n);
    Value scratch;
    for (size_t k = 0; k < n; ++k) {
      ReadScalar(r, et, scratch, element(k));
      v.floats[k] = scratch.f;
    }
  } else if (IsSigned(et)) {
    v.ints.resize(n);
    Value scratch;
    for (size_t k = 0; k < n; ++k) {
      ReadScalar(r, et, scratch, element(k));
      v.ints[k] = scratch.i;
    }
  } else {  // unsigned integers and bools
    v.uints.resize(n);
    Value scratch;
    for (size_t k = 0; k < n; ++k) {
      ReadScalar(r, et, scratch, element(k));
      v.uints[k] = et == ValueType::Bool ? uint64_t{scratch.b} : scratch.u;
    }
  }
  return v;
}

std::string SupportedFormats() {
  std::string out;
  for (BlockFormat f : AllBlockFormats()) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{} ({})", BlockFormatName(f), static_cast<uint32_t>(f));
  }
  return out;
}

std::string DimsText(const std::vector<int64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

// Closes a descriptor on every path out of Open.
struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};

}  // namespace

std::string_view ValueTypeName(ValueType type) {
  switch (type) {
    case ValueType::Uint8:
      return "u8";
    case ValueType::Int8:
      return "i8";
    case ValueType::Uint16:
      return "u16";
    case ValueType::Int16:
      return "i16";
    case ValueType::Uint32:
      return "u32";
    case ValueType::Int32:
      return "i32";
    case ValueType::Float32:
      return "f32";
    case ValueType::Bool:
      return "bool";
    case ValueType::String:
      return "string";
    case ValueType::Array:
      return "array";
    case ValueType::Uint64:
      return "u64";
    case ValueType::Int64:
      return "i64";
    case ValueType::Float64:
      return "f64";
  }
  return "unknown";
}

struct File::State {
  std::string path;
  uint32_t version = 0;
  uint64_t alignment = kDefaultAlignment;
  uint64_t data_offset = 0;
  uint64_t size = 0;
  const uint8_t* map = nullptr;  // null only for an empty file (which never parses)
  std::vector<std::pair<std::string, Value>> metadata;
  std::map<std::string, size_t, std::less<>> key_index;
  std::vector<TensorInfo> tensors;
  std::map<std::string, size_t, std::less<>> tensor_index;

  State() = default;
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  ~State() {
    if (map != nullptr) ::munmap(const_cast<uint8_t*>(map), static_cast<size_t>(size));
  }

  void Parse();
  void ParseTensorInfo(Reader& r, uint64_t index);
  void CheckTensorPlacement();
  const Value& Lookup(std::string_view key) const;
  [[noreturn]] void WrongType(std::string_view key, const Value& v,
                              std::string_view expected) const;
};

void File::State::Parse() {
  Reader r(path, map, size);
  const uint32_t magic = r.Read<uint32_t>("magic");
  if (magic != kMagic) {
    Fail(path, "magic",
         fmt::format("must be \"GGUF\" (bytes 47 47 55 46), got bytes {:02x} {:02x} {:02x} {:02x}",
                     magic & 0xff, (magic >> 8) & 0xff, (magic >> 16) & 0xff, magic >> 24));
  }
  version = r.Read<uint32_t>("version");
  if (version != 2 && version != 3) {
    std::string why;
    if (version == 1) why = " (GGUF v1 is not supported)";
    if (version != 0 && (version & 0xffff) == 0)
      why = " (a big-endian file? only little-endian GGUF is read)";
    Fail(path, "version", fmt::format("must be 2 or 3, got {}{}", version, why));
  }
  const uint64_t tensor_count = r.Read<uint64_t>("tensor_count");
  const uint64_t kv_count = r.Read<uint64_t>("metadata_kv_count");
  if (tensor_count > r.remaining() / kMinTensorInfoBytes) {
    Fail(path, "tensor_count",
         fmt::format(
             "{} tensor infos need at least {} bytes each, but only {} bytes follow the header",
             tensor_count, kMinTensorInfoBytes, r.remaining()));
  }
  if (kv_count > r.remaining() / kMinKvBytes) {
    Fail(path, "metadata_kv_count",
         fmt::format("{} key-value pairs need at least {} bytes each, but only {} bytes follow the "
                     "header",
                     kv_count, kMinKvBytes, r.remaining()));
  }

  metadata.reserve(static_cast<size_t>(kv_count));
  for (uint64_t k = 0; k < kv_count; ++k) {
    std::string key = r.ReadString([k] { return fmt::format("metadata key {}", k); });
    const std::string field = "key " + Quote(key);
    if (key_index.count(key) != 0) {
      Fail(path, field, fmt::format("duplicate metadata key (pairs {} and {})", key_index[key], k));
    }
    const ValueType type = ReadValueType(r, field + " value type");
    Value value = ReadValue(r, type, field, 0);
    key_index.emplace(key, metadata.size());
    metadata.emplace_back(std::move(key), std::move(value));
  }

  if (auto it = key_index.find("general.alignment"); it != key_index.end()) {
    const Value& a = metadata[it->second].second;
    if (a.type != ValueType::Uint32) {
      Fail(path, "general.alignment", fmt::format("must be a u32, got {}", TypeText(a)));
    }
    if (a.u == 0 || (a.u & (a.u - 1)) != 0) {
      Fail(path, "general.alignment", fmt::format("must be a non-zero power of two, got {}", a.u));
    }
    alignment = a.u;
  }

  tensors.reserve(static_cast<size_t>(tensor_count));
  for (uint64_t k = 0; k < tensor_count; ++k) ParseTensorInfo(r, k);

  // pos <= size < 2^63 and alignment <= 2^31, so the padding cannot overflow.
  const uint64_t infos_end = r.pos();
  data_offset = (infos_end + alignment - 1) / alignment * alignment;
  if (data_offset > size) {
    Fail(path, "data_offset",
         fmt::format("the data section starts at {} (tensor infos end at {}, padded to alignment "
                     "{}), past the end of the file ({} bytes)",
                     data_offset, infos_end, alignment, size));
  }
  CheckTensorPlacement();
}

void File::State::ParseTensorInfo(Reader& r, uint64_t index) {
  TensorInfo t;
  t.name = r.ReadString([index] { return fmt::format("tensor {} name", index); });
  const std::string field = "tensor " + Quote(t.name);
  if (tensor_index.count(t.name) != 0) {
    Fail(path, field,
         fmt::format("duplicate tensor name (tensors {} and {})", tensor_index[t.name], index));
  }
  const uint32_t n_dims = r.Read<uint32_t>(field + " n_dims");
  if (n_dims > kMaxDims) {
    Fail(path, field + " n_dims",
         fmt::format("must be <= {} (GGML_MAX_DIMS), got {}", kMaxDims, n_dims));
  }
  // `nominal` counts zero dims as 1, so every stride (and the byte count) of a zero-sized tensor
  // fits int64 too.
  int64_t nominal = 1;
  bool has_zero = false;
  for (uint32_t j = 0; j < n_dims; ++j) {
    const std::string dim_field = fmt::format("{} dims[{}]", field, j);
    const uint64_t d = r.Read<uint64_t>(dim_field);
    if (d > kInt64Max) Fail(path, dim_field, fmt::format("must be <= INT64_MAX, got {}", d));
    const auto dim = static_cast<int64_t>(d);
    t.dims.push_back(dim);
    has_zero = has_zero || dim == 0;
    const int64_t factor = std::max<int64_t>(dim, 1);
    if (nominal > std::numeric_limits<int64_t>::max() / factor) {
      Fail(path, field + " dims",
           fmt::format("element count overflows int64 at dims[{}] (dims {})", j, DimsText(t.dims)));
    }
    nominal *= factor;
  }
  t.elements = has_zero ? 0 : nominal;

  const uint32_t ggml_type = r.Read<uint32_t>(field + " type");
  const std::optional<BlockFormat> format = BlockFormatFromGgmlType(ggml_type);
  if (!format) {
    Fail(path, field + " type",
         fmt::format("ggml type {} is unknown or not read by Backplane; supported: {}", ggml_type,
                     SupportedFormats()));
  }
  t.format = *format;
  const BlockLayout layout = LayoutOf(t.format);
  const int64_t row = n_dims == 0 ? 1 : t.dims[0];
  if (row % layout.elements != 0) {
    Fail(path, field + " dims[0]",
         fmt::format("must be a multiple of {} (the {} block size), got {}", layout.elements,
                     BlockFormatName(t.format), row));
  }
  if (nominal / layout.elements + 1 > std::numeric_limits<int64_t>::max() / layout.bytes) {
    Fail(path, field + " dims",
         fmt::format("{} values of shape {} take more than INT64_MAX bytes",
                     BlockFormatName(t.format), DimsText(t.dims)));
  }
  t.bytes = BlockBytes(t.format, t.elements, path, field);
  t.offset = r.Read<uint64_t>(field + " offset");
  if (t.offset % alignment != 0) {
    Fail(path, field + " offset",
         fmt::format("must be a multiple of the alignment {}, got {}", alignment, t.offset));
  }
  tensor_index.emplace(t.name, tensors.size());
  tensors.push_back(std::move(t));
}

void File::State::CheckTensorPlacement() {
  const uint64_t data_bytes = size - data_offset;
  for (const TensorInfo& t : tensors) {
    const auto bytes = static_cast<uint64_t>(t.bytes);
    if (t.offset > data_bytes || bytes > data_bytes - t.offset) {
      Fail(path, "tensor " + Quote(t.name) + " data",
           fmt::format("[offset {}, {} bytes] runs past the end of the file ({} bytes; the data "
                       "section starts at {})",
                       t.offset, t.bytes, size, data_offset));
    }
  }
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::pair(tensors[a].offset, tensors[a].bytes) <
           std::pair(tensors[b].offset, tensors[b].bytes);
  });
  // Sorted by offset, non-empty tensors are disjoint exactly when each starts at or after the end
  // of the one before.
  const TensorInfo* previous = nullptr;
  for (size_t k : order) {
    const TensorInfo& t = tensors[k];
    if (t.bytes == 0) continue;
    if (previous != nullptr &&
        previous->offset + static_cast<uint64_t>(previous->bytes) > t.offset) {
      Fail(path, "tensor " + Quote(t.name) + " data",
           fmt::format("[offset {}, {} bytes] overlaps tensor {} [offset {}, {} bytes]", t.offset,
                       t.bytes, Quote(previous->name), previous->offset, previous->bytes));
    }
    previous = &t;
  }
}

const Value& File::State::Lookup(std::string_view key) const {
  auto it = key_index.find(key);
  if (it == key_index.end()) Fail(path, "key " + Quote(key), "not in the metadata");
  return metadata[it->second].second;
}

void File::State::WrongType(std::string_view key, const Value& v, std::string_view expected) const {
  Fail(path, "key " + Quote(key), fmt::format("expected {}, got {}", expected, TypeText(v)));
}

File File::Open(const std::string& path) {
  auto state = std::make_shared<State>();
  state->path = path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) Fail(path, "open", SystemMessage(errno));
  const FdCloser closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) Fail(path, "open", SystemMessage(errno));
  if (!S_ISREG(st.st_mode)) Fail(path, "open", "not a regular file");
  state->size = static_cast<uint64_t>(st.st_size);
  if (state->size > 0) {
    void* map = ::mmap(nullptr, static_cast<size_t>(state->size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) Fail(path, "mmap", SystemMessage(errno));
    state->map = static_cast<const uint8_t*>(map);
  }
  state->Parse();
  File file;
  file.state_ = std::move(state);
  return file;
}

const std::string& File::path() const { return Checked(state_).path; }
uint32_t File::version() const { return Checked(state_).version; }
uint64_t File::alignment() const { return Checked(state_).alignment; }
uint64_t File::data_offset() const { return Checked(state_).data_offset; }
uint64_t File::size() const { return Checked(state_).size; }

const std::vector<std::pair<std::string, Value>>& File::metadata() const {
  return Checked(state_).metadata;
}

const Value* File::Find(std::string_view key) const {
  const State& s = Checked(state_);
  auto it = s.key_index.find(key);
  return it == s.key_index.end() ? nullptr : &s.metadata[it->second].second;
}

std::string File::GetString(std::string_view key) const {
  const State& s = Checked(state_);
  const Value& v = s.Lookup(key);
  if (v.type != ValueType::String) s.WrongType(key, v, "a string");
  return v.str;
}

int64_t File::GetInt(std::string_view key) const {
  const State& s = Checked(state_);
  const Value& v = s.Lookup(key);
  if (!IsInteger(v.type)) s.WrongType(key, v, "an integer");
  if (IsUnsigned(v.type) && v.u > kInt64Max) {
    Fail(s.path, "key " + Quote(key),
         fmt::format("{} value {} does not fit int64", ValueTypeName(v.type), v.u));
  }
  return v.i;
}

double File::GetFloat(std::string_view key) const {
  const State& s = Checked(state_);
  const Value& v = s.Lookup(key);
  if (IsFloat(v.type)) return v.f;
  if (IsUnsigned(v.type)) return static_cast<double>(v.u);
  if (IsSigned(v.type)) return static_cast<double>(v.i);
  s.WrongType(key, v, "a float or an integer");
}

bool File::GetBool(std::string_view key) const {
  const State& s = Checked(state_);
  const Value& v = s.Lookup(key);
  if (v.type != ValueType::Bool) s.WrongType(key, v, "a bool");
  return v.b;
}

const std::vector<std::string>& File::GetStringArray(std::string_view key) const {
  const State& s = Checked(state_);
  const Value& v = s.Lookup(key);
  if (v.type != ValueType::Array || v.element_type != ValueType::String) {
    s.WrongType(key, v, "an array of string");
  }
  return v.strings;
}

std::vector<int64_t> File::GetIntArray(std::string_view key) const {
  const State& s = Checked(state_);
  const Value& v = s.Lookup(key);
  if (v.type != ValueType::Array || !IsInteger(v.element_type)) {
    s.WrongType(key, v, "an array of integers");
  }
  if (IsSigned(v.element_type)) return v.ints;
  std::vector<int64_t> out(v.uints.size());
  for (size_t k = 0; k < out.size(); ++k) {
    if (v.uints[k] > kInt64Max) {
      Fail(
          s.path, fmt::format("key {}[{}]", Quote(key), k),
          fmt::format("{} value {} does not fit int64", ValueTypeName(v.element_type), v.uints[k]));
    }
    out[k] = static_cast<int64_t>(v.uints[k]);
  }
  return out;
}

std::vector<double> File::GetFloatArray(std::string_view key) const {
  const State& s = Checked(state_);
  const Value& v = s.Lookup(key);
  if (v.type != ValueType::Array || !(IsFloat(v.element_type) || IsInteger(v.element_type))) {
    s.WrongType(key, v, "an array of floats or integers");
  }
  if (IsFloat(v.element_type)) return v.floats;
  if (IsSigned(v.element_type)) return std::vector<double>(v.ints.begin(), v.ints.end());
  return std::vector<double>(v.uints.begin(), v.uints.end());
}

const std::vector<TensorInfo>& File::tensors() const { return Checked(state_).tensors; }

const TensorInfo* File::FindTensor(std::string_view name) const {
  const State& s = Checked(state_);
  auto it = s.tensor_index.find(name);
  return it == s.tensor_index.end() ? nullptr : &s.tensors[it->second];
}

const TensorInfo& File::Tensor(std::string_view name) const {
  const State& s = Checked(state_);
  const TensorInfo* t = FindTensor(name);
  if (t == nullptr) {
    Fail(s.path, "tensor " + Quote(name),
         fmt::format("not in the file ({} tensors)", s.tensors.size()));
  }
  return *t;
}

const uint8_t* File::Data(const TensorInfo& tensor) const {
  const State& s = Checked(state_);
  const uint64_t data_bytes = s.size - s.data_offset;
  if (tensor.bytes < 0 || tensor.offset > data_bytes ||
      static_cast<uint64_t>(tensor.bytes) > data_bytes - tensor.offset) {
    Fail(s.path, "tensor " + Quote(tensor.name) + " data",
         fmt::format("[offset {}, {} bytes] lies outside this file's data section ({} bytes)",
                     tensor.offset, tensor.bytes, data_bytes));
  }
  return s.map + s.data_offset + tensor.offset;
}

}  // namespace backplane::gguf
