// A minimal GGUF v3 writer for tests that need small crafted model files (the reader's own
// fixture comes from the gguf Python package instead).
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace backplane::test {

class GgufWriter {
 public:
  void String(const std::string& key, const std::string& value) {
    Key(key, 8);
    Str(value);
  }
  void U32(const std::string& key, uint32_t value) {
    Key(key, 4);
    Put(value);
  }
  void F32(const std::string& key, float value) {
    Key(key, 6);
    Put(value);
  }
  // An f32 tensor with ggml-order dims.
  void TensorF32(const std::string& name, std::vector<uint64_t> dims, const std::vector<float>& values) {
    tensors_.push_back({name, std::move(dims), values});
  }

  std::vector<uint8_t> Bytes() const {
    GgufWriter out;
    out.Put(uint32_t{0x46554747});
    out.Put(uint32_t{3});
    out.Put(static_cast<uint64_t>(tensors_.size()));
    out.Put(kv_count_);
    out.bytes_.insert(out.bytes_.end(), bytes_.begin(), bytes_.end());
    uint64_t offset = 0;
    for (const auto& t : tensors_) {
      out.Str(t.name);
      out.Put(static_cast<uint32_t>(t.dims.size()));
      for (const uint64_t d : t.dims) out.Put(d);
      out.Put(uint32_t{0});  // GGML_TYPE_F32
      out.Put(offset);
      offset += Aligned(t.values.size() * 4);
    }
    out.bytes_.resize(Aligned(out.bytes_.size()), 0);
    for (const auto& t : tensors_) {
      const size_t start = out.bytes_.size();
      out.bytes_.resize(start + Aligned(t.values.size() * 4), 0);
      std::memcpy(out.bytes_.data() + start, t.values.data(), t.values.size() * 4);
    }
    return out.bytes_;
  }

  void Write(const std::string& path) const {
    const std::vector<uint8_t> b = Bytes();
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  }

 private:
  struct Tensor {
    std::string name;
    std::vector<uint64_t> dims;
    std::vector<float> values;
  };
  static size_t Aligned(size_t n) { return (n + 31) / 32 * 32; }
  template <class T>
  void Put(T v) {
    const size_t at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    std::memcpy(bytes_.data() + at, &v, sizeof(T));
  }
  void Str(const std::string& s) {
    Put(static_cast<uint64_t>(s.size()));
    bytes_.insert(bytes_.end(), s.begin(), s.end());
  }
  void Key(const std::string& key, uint32_t type) {
    Str(key);
    Put(type);
    ++kv_count_;
  }
  std::vector<uint8_t> bytes_;
  std::vector<Tensor> tensors_;
  uint64_t kv_count_ = 0;
};

}  // namespace backplane::test
