// GGUF model files (versions 2 and 3): metadata, tensor infos and the tensor data section, read
// through a read-only memory map. Every size read from the file is checked against the file's
// length before anything is allocated; errors name the file and the field:
//   "model.gguf: tensor 'blk.0.attn_q.weight' data [offset 123, 4096 bytes] runs past the end of the file (2000 bytes)"
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backplane/block_format.hpp"

namespace backplane::gguf {

// The GGUF value types, with the file format's numeric values.
enum class ValueType : uint32_t {
  Uint8 = 0,
  Int8 = 1,
  Uint16 = 2,
  Int16 = 3,
  Uint32 = 4,
  Int32 = 5,
  Float32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  Uint64 = 10,
  Int64 = 11,
  Float64 = 12,
};
std::string_view ValueTypeName(ValueType type);  // "u8", "i32", "f32", "string", "array", ...

// One metadata value. Scalars keep their type; integers are held widened (unsigned in `u`,
// signed in `i`, both set when the value fits), floats in `f`. An array holds its element type
// and its elements in the matching vector (strings in `strings`, integers in `ints`/`uints`,
// floats in `floats`, bools in `uints`, nested arrays in `arrays`).
struct Value {
  ValueType type = ValueType::Uint8;
  uint64_t u = 0;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  std::string str;
  ValueType element_type = ValueType::Uint8;  // arrays only
  std::vector<std::string> strings;
  std::vector<int64_t> ints;
  std::vector<uint64_t> uints;
  std::vector<double> floats;
  std::vector<Value> arrays;
  uint64_t array_size = 0;  // element count of an array
};

struct TensorInfo {
  std::string name;
  std::vector<int64_t> dims;  // ggml order: dims[0] is the contiguous (fastest) dimension
  BlockFormat format = BlockFormat::F32;
  uint64_t offset = 0;  // from the start of the data section
  int64_t elements = 0;
  int64_t bytes = 0;
};

class File {
 public:
  // Maps `path` read-only and parses the header, metadata and tensor infos; checks magic,
  // version (2 or 3), counts, every string and array length, the alignment, each tensor's block
  // format, dims, size and that no two tensors overlap and all lie inside the file.
  static File Open(const std::string& path);

  const std::string& path() const;
  uint32_t version() const;
  uint64_t alignment() const;  // general.alignment, default 32
  uint64_t data_offset() const;  // file offset of the data section

  // Metadata in file order.
  const std::vector<std::pair<std::string, Value>>& metadata() const;
  const Value* Find(std::string_view key) const;  // nullptr when absent
  // Typed getters; each throws InvalidArgument naming the file and key when the key is missing
  // or has another type. GetInt accepts any integer type (and checks the value fits int64),
  // GetFloat any float or integer type.
  std::string GetString(std::string_view key) const;
  int64_t GetInt(std::string_view key) const;
  double GetFloat(std::string_view key) const;
  bool GetBool(std::string_view key) const;
  const std::vector<std::string>& GetStringArray(std::string_view key) const;
  std::vector<int64_t> GetIntArray(std::string_view key) const;
  std::vector<double> GetFloatArray(std::string_view key) const;

  const std::vector<TensorInfo>& tensors() const;
  const TensorInfo* FindTensor(std::string_view name) const;  // nullptr when absent
  const TensorInfo& Tensor(std::string_view name) const;      // throws naming the file and tensor
  // The tensor's bytes inside the mapping (valid while any copy of this File lives).
  const uint8_t* Data(const TensorInfo& tensor) const;
  // The whole file's size in bytes.
  uint64_t size() const;

 private:
  struct State;
  std::shared_ptr<const State> state_;
};

}  // namespace backplane::gguf
