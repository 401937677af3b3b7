// The GGUF reader against a file written by the PyPI gguf package
// (tests/golden/gen_gguf_fixture.py), against the real SmolLM2 model (facts read by gguf's
// GGUFReader) and against hostile files crafted byte by byte here.
#include "backplane/gguf.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "backplane/error.hpp"

namespace backplane::gguf {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

std::string GoldenPath(const std::string& name) {
  return std::string(BACKPLANE_SOURCE_DIR) + "/tests/golden/data/gguf/" + name;
}

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream f(path);
  EXPECT_TRUE(f.good()) << path;
  return nlohmann::json::parse(f);
}

Bytes ReadBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f.good()) << path;
  return Bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

Bytes FromHex(const std::string& hex) {
  Bytes out;
  for (size_t k = 0; k + 1 < hex.size(); k += 2) {
    out.push_back(static_cast<uint8_t>(std::stoi(hex.substr(k, 2), nullptr, 16)));
  }
  return out;
}

// Writes files into a fresh folder removed at the end of the test.
class GgufTempDir {
 public:
  GgufTempDir() {
    static int counter = 0;
    dir_ = fs::temp_directory_path() / fmt::format("bp_gguf_{}_{}", ::getpid(), counter++);
    fs::create_directories(dir_);
  }
  ~GgufTempDir() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string Write(const std::string& name, const Bytes& bytes, size_t length) const {
    const std::string path = (dir_ / name).string();
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(length));
    EXPECT_TRUE(f.good()) << path;
    return path;
  }
  std::string Write(const std::string& name, const Bytes& bytes) const {
    return Write(name, bytes, bytes.size());
  }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  fs::path dir_;
};

// Little-endian byte builder for crafted files.
class Builder {
 public:
  Builder& U8(uint8_t v) { return Int(v, 1); }
  Builder& U32(uint32_t v) { return Int(v, 4); }
  Builder& U64(uint64_t v) { return Int(v, 8); }
  Builder& I32(int32_t v) { return Int(static_cast<uint32_t>(v), 4); }
  Builder& F32(float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    return Int(bits, 4);
  }
  Builder& Str(std::string_view s) {
    U64(s.size());
    bytes_.insert(bytes_.end(), s.begin(), s.end());
    return *this;
  }
  Builder& Append(const Bytes& b) {
    bytes_.insert(bytes_.end(), b.begin(), b.end());
    return *this;
  }
  Builder& Zeros(uint64_t n) {
    bytes_.resize(bytes_.size() + n, 0);
    return *this;
  }
  Builder& PadTo(uint64_t alignment) {
    while (bytes_.size() % alignment != 0) bytes_.push_back(0);
    return *this;
  }
  // Metadata pairs.
  Builder& KeyU32(std::string_view key, uint32_t v) { return Str(key).U32(4).U32(v); }
  Builder& KeyI32(std::string_view key, int32_t v) { return Str(key).U32(5).I32(v); }
  Builder& KeyStr(std::string_view key, std::string_view v) { return Str(key).U32(8).Str(v); }
  const Bytes& bytes() const { return bytes_; }
  size_t size() const { return bytes_.size(); }

 private:
  Builder& Int(uint64_t v, int n) {
    for (int k = 0; k < n; ++k) bytes_.push_back(static_cast<uint8_t>(v >> (8 * k)));
    return *this;
  }
  Bytes bytes_;
};

struct TensorSpec {
  std::string name;
  std::vector<uint64_t> dims;
  uint32_t ggml_type;
  uint64_t offset;
};

constexpr uint32_t kF32 = 0;
constexpr uint32_t kQ8_0 = 8;

// A whole file: header, `kv_count` pairs already encoded in `kvs`, tensor infos, padding to
// `alignment`, then `data_bytes` bytes of data.
Bytes MakeFile(uint64_t kv_count, const Builder& kvs, const std::vector<TensorSpec>& tensors,
               uint64_t data_bytes, uint64_t alignment = 32, uint32_t version = 3) {
  Builder b;
  b.U32(0x46554747).U32(version).U64(tensors.size()).U64(kv_count).Append(kvs.bytes());
  for (const TensorSpec& t : tensors) {
    b.Str(t.name).U32(static_cast<uint32_t>(t.dims.size()));
    for (uint64_t d : t.dims) b.U64(d);
    b.U32(t.ggml_type).U64(t.offset);
  }
  b.PadTo(alignment);
  uint8_t fill = 1;
  for (uint64_t k = 0; k < data_bytes; ++k) b.U8(fill++);
  return b.bytes();
}

// A small valid file whose last tensor ends exactly at the end of the file, so that cutting it
// anywhere must fail: 3 pairs, an F32 [4, 2] tensor (32 bytes) and a Q8_0 [32] tensor (34 bytes).
Bytes SmallValidFile() {
  Builder kvs;
  kvs.KeyStr("general.architecture", "tiny").KeyU32("general.alignment", 32);
  kvs.Str("tiny.list").U32(9).U32(8).U64(2).Str("ab").Str("c");  // array of 2 strings
  return MakeFile(3, kvs, {{"a", {4, 2}, kF32, 0}, {"b", {32}, kQ8_0, 32}}, 32 + 34);
}

// Opens `bytes` written to a file and expects an InvalidArgument whose one-line message names the
// file and contains every one of `parts`.
void ExpectOpenFails(const Bytes& bytes, const std::vector<std::string>& parts) {
  GgufTempDir dir;
  const std::string path = dir.Write("hostile.gguf", bytes);
  try {
    File::Open(path);
    ADD_FAILURE() << "File::Open accepted a bad file; expected an error with '" << parts.front()
                  << "'";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << what;
    EXPECT_EQ(what.rfind(path + ": ", 0), 0u) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    for (const std::string& part : parts) {
      EXPECT_NE(what.find(part), std::string::npos) << what << "\n  lacks: " << part;
    }
  }
}

template <class Fn>
void ExpectGetterFails(const File& file, Fn&& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "the getter did not throw; expected an error with '" << parts.front() << "'";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << what;
    EXPECT_EQ(what.rfind(file.path() + ": ", 0), 0u) << what;
    for (const std::string& part : parts) {
      EXPECT_NE(what.find(part), std::string::npos) << what << "\n  lacks: " << part;
    }
  }
}

// --- The fixture written by gguf-py ---------------------------------------------------------

void ExpectValue(const Value& v, const nlohmann::json& want, const std::string& where) {
  SCOPED_TRACE(where);
  ASSERT_EQ(ValueTypeName(v.type), want["type"].get<std::string>());
  const std::string type = want["type"];
  const nlohmann::json& value = want["value"];
  if (type == "u8" || type == "u16" || type == "u32" || type == "u64") {
    const auto u = value.get<uint64_t>();
    EXPECT_EQ(v.u, u);
    if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      EXPECT_EQ(v.i, static_cast<int64_t>(u));
    }
  } else if (type == "i8" || type == "i16" || type == "i32" || type == "i64") {
    const auto i = value.get<int64_t>();
    EXPECT_EQ(v.i, i);
    if (i >= 0) {
      EXPECT_EQ(v.u, static_cast<uint64_t>(i));
    }
  } else if (type == "f32" || type == "f64") {
    EXPECT_EQ(v.f, value.get<double>());
  } else if (type == "bool") {
    EXPECT_EQ(v.b, value.get<bool>());
  } else if (type == "string") {
    EXPECT_EQ(v.str, value.get<std::string>());
  } else {
    ASSERT_EQ(type, "array");
    const std::string et = want["element_type"];
    EXPECT_EQ(ValueTypeName(v.element_type), et);
    ASSERT_EQ(v.array_size, value.size());
    if (et == "string") {
      EXPECT_EQ(v.strings, value.get<std::vector<std::string>>());
    } else if (et == "f32" || et == "f64") {
      EXPECT_EQ(v.floats, value.get<std::vector<double>>());
    } else if (et == "i8" || et == "i16" || et == "i32" || et == "i64") {
      EXPECT_EQ(v.ints, value.get<std::vector<int64_t>>());
    } else if (et == "bool") {
      std::vector<uint64_t> want_bits;
      for (const auto& b : value) want_bits.push_back(b.get<bool>() ? 1 : 0);
      EXPECT_EQ(v.uints, want_bits);
    } else if (et == "array") {
      ASSERT_EQ(v.arrays.size(), value.size());
      for (size_t k = 0; k < v.arrays.size(); ++k) {
        ExpectValue(v.arrays[k], value[k], fmt::format("{}[{}]", where, k));
      }
    } else {
      EXPECT_EQ(v.uints, value.get<std::vector<uint64_t>>());
    }
  }
}

void ExpectMatchesFixture(const File& file, const nlohmann::json& want) {
  EXPECT_EQ(file.alignment(), want["alignment"].get<uint64_t>());
  EXPECT_EQ(file.data_offset(), want["data_offset"].get<uint64_t>());
  EXPECT_EQ(file.size(), want["file_size"].get<uint64_t>());
  const auto& metadata = file.metadata();
  ASSERT_EQ(metadata.size(), want["metadata"].size());
  for (size_t k = 0; k < metadata.size(); ++k) {
    const nlohmann::json& w = want["metadata"][k];
    EXPECT_EQ(metadata[k].first, w["key"].get<std::string>());
    ExpectValue(metadata[k].second, w, metadata[k].first);
    EXPECT_EQ(file.Find(metadata[k].first), &metadata[k].second);
  }
  const auto& tensors = file.tensors();
  ASSERT_EQ(tensors.size(), want["tensors"].size());
  for (size_t k = 0; k < tensors.size(); ++k) {
    const TensorInfo& t = tensors[k];
    const nlohmann::json& w = want["tensors"][k];
    SCOPED_TRACE(t.name);
    EXPECT_EQ(t.name, w["name"].get<std::string>());
    EXPECT_EQ(static_cast<uint32_t>(t.format), w["ggml_type"].get<uint32_t>());
    EXPECT_EQ(t.dims, w["dims"].get<std::vector<int64_t>>());
    EXPECT_EQ(t.elements,
              std::accumulate(t.dims.begin(), t.dims.end(), int64_t{1}, std::multiplies<>()));
    EXPECT_EQ(t.offset, w["offset"].get<uint64_t>());
    EXPECT_EQ(t.bytes, w["bytes"].get<int64_t>());
    EXPECT_EQ(&file.Tensor(t.name), &t);
    const Bytes data = FromHex(w["hex"]);
    ASSERT_EQ(data.size(), static_cast<size_t>(t.bytes));
    EXPECT_EQ(Bytes(file.Data(t), file.Data(t) + t.bytes), data);
  }
}

TEST(GgufFixture, MatchesTheIndependentWriter) {
  const nlohmann::json want = ReadJson(GoldenPath("fixture.json"));
  const File file = File::Open(GoldenPath("fixture.gguf"));
  EXPECT_EQ(file.path(), GoldenPath("fixture.gguf"));
  EXPECT_EQ(file.version(), want["version"].get<uint32_t>());
  ExpectMatchesFixture(file, want);
}

TEST(GgufFixture, ReadsVersion2) {
  // v2 and v3 share the layout (v3 added big-endian files); patch the version field of a copy.
  Bytes bytes = ReadBytes(GoldenPath("fixture.gguf"));
  ASSERT_EQ(bytes[4], 3);
  bytes[4] = 2;
  GgufTempDir dir;
  const File file = File::Open(dir.Write("v2.gguf", bytes));
  EXPECT_EQ(file.version(), 2u);
  ExpectMatchesFixture(file, ReadJson(GoldenPath("fixture.json")));
}

TEST(GgufFixture, TypedGetters) {
  const File file = File::Open(GoldenPath("fixture.gguf"));
  EXPECT_EQ(file.GetString("general.architecture"), "test");
  EXPECT_EQ(file.GetString("test.string"), "h\u00e9llo w\u00f6rld \u65e5\u672c");
  EXPECT_EQ(file.GetInt("test.u8"), 200);
  EXPECT_EQ(file.GetInt("test.i8"), -100);
  EXPECT_EQ(file.GetInt("test.u16"), 60000);
  EXPECT_EQ(file.GetInt("test.i16"), -30000);
  EXPECT_EQ(file.GetInt("test.u32"), 4000000000);
  EXPECT_EQ(file.GetInt("test.i32"), -2000000000);
  EXPECT_EQ(file.GetInt("test.u64"), 12345678901234);
  EXPECT_EQ(file.GetInt("test.i64"), -(int64_t{1} << 62) - 7);
  EXPECT_EQ(file.GetFloat("test.f32"), static_cast<double>(3.14159f));
  EXPECT_EQ(file.GetFloat("test.f64"), 2.718281828459045);
  EXPECT_EQ(file.GetFloat("test.i32"), -2000000000.0);
  EXPECT_EQ(file.GetFloat("test.u64_huge"), 9223372036854775813.0);
  EXPECT_TRUE(file.GetBool("test.bool_true"));
  EXPECT_FALSE(file.GetBool("test.bool_false"));
  EXPECT_EQ(file.GetStringArray("test.array.string"),
            (std::vector<std::string>{"a", "bc", "", "\u65e5\u672c"}));
  EXPECT_EQ(file.GetIntArray("test.array.u32"), (std::vector<int64_t>{7, 4294967295}));
  EXPECT_EQ(file.GetIntArray("test.array.i64"),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::min(),
                                  std::numeric_limits<int64_t>::max()}));
  EXPECT_EQ(file.GetFloatArray("test.array.f32"),
            (std::vector<double>{0.5, -1.25, static_cast<double>(1e-3f)}));
  EXPECT_EQ(file.GetFloatArray("test.array.i16"), (std::vector<double>{-32768, 0, 32767}));
  EXPECT_EQ(file.Find("nope"), nullptr);
  EXPECT_EQ(file.FindTensor("nope"), nullptr);

  ExpectGetterFails(file, [&] { file.GetInt("test.u64_huge"); },
                    {"key 'test.u64_huge'", "does not fit int64"});
  ExpectGetterFails(file, [&] { file.GetIntArray("test.array.u64"); },
                    {"test.array.u64", "does not fit int64"});
  ExpectGetterFails(file, [&] { file.GetString("test.u32"); },
                    {"key 'test.u32'", "expected a string, got u32"});
  ExpectGetterFails(file, [&] { file.GetInt("test.f32"); },
                    {"key 'test.f32'", "expected an integer, got f32"});
  ExpectGetterFails(file, [&] { file.GetInt("test.bool_true"); }, {"test.bool_true", "got bool"});
  ExpectGetterFails(file, [&] { file.GetFloat("test.string"); }, {"test.string", "got string"});
  ExpectGetterFails(file, [&] { file.GetBool("test.u8"); }, {"test.u8", "expected a bool, got u8"});
  ExpectGetterFails(file, [&] { file.GetStringArray("test.array.i32"); },
                    {"key 'test.array.i32'", "got array of i32"});
  ExpectGetterFails(file, [&] { file.GetIntArray("test.array.f32"); },
                    {"test.array.f32", "got array of f32"});
  ExpectGetterFails(file, [&] { file.GetFloatArray("test.array.string"); },
                    {"test.array.string", "got array of string"});
  ExpectGetterFails(file, [&] { file.GetIntArray("test.array.nested_i32"); },
                    {"test.array.nested_i32", "got array of array"});
  ExpectGetterFails(file, [&] { file.GetInt("no.such.key"); },
                    {"key 'no.such.key'", "not in the metadata"});
  ExpectGetterFails(file, [&] { file.GetStringArray("no.such.key"); },
                    {"no.such.key", "not in the metadata"});
  ExpectGetterFails(file, [&] { file.Tensor("no.such.tensor"); },
                    {"tensor 'no.such.tensor'", "not in the file"});
}

TEST(GgufFixture, DataOutlivesTheFirstHandle) {
  const nlohmann::json want = ReadJson(GoldenPath("fixture.json"));
  std::vector<File> copies;
  const uint8_t* data = nullptr;
  {
    const File file = File::Open(GoldenPath("fixture.gguf"));
    copies.push_back(file);
    data = file.Data(file.Tensor("f32.vector"));
  }
  const Bytes expected = FromHex(want["tensors"][0]["hex"]);
  EXPECT_EQ(Bytes(data, data + expected.size()), expected);
  EXPECT_EQ(copies[0].Data(copies[0].Tensor("f32.vector")), data);
}

TEST(GgufFixture, EveryTruncationOfTheHeaderAndDataThrows) {
  const Bytes bytes = ReadBytes(GoldenPath("fixture.gguf"));
  const File whole = File::Open(GoldenPath("fixture.gguf"));
  const TensorInfo& last = whole.tensors().back();
  const uint64_t end = whole.data_offset() + last.offset + static_cast<uint64_t>(last.bytes);
  ASSERT_LE(end, bytes.size());
  GgufTempDir dir;
  const std::string path = dir.Write("cut.gguf", bytes, end);
  for (uint64_t length = end; length-- > 0;) {
    fs::resize_file(path, length);
    try {
      File::Open(path);
      ADD_FAILURE() << "a cut at " << length << " of " << end << " bytes was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
      EXPECT_EQ(std::string(e.what()).rfind(path + ": ", 0), 0u) << e.what();
    }
  }
}

TEST(GgufFixture, RandomByteChangesInTheHeaderNeverCrash) {
  // Each run changes 1-4 header bytes of a copy; Open must either succeed with every tensor
  // inside the file or throw backplane::Error (any other exception fails the test).
  const Bytes bytes = ReadBytes(GoldenPath("fixture.gguf"));
  const uint64_t header = File::Open(GoldenPath("fixture.gguf")).data_offset();
  GgufTempDir dir;
  const std::string path = dir.Write("mutant.gguf", bytes);
  std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
  std::mt19937_64 rng(12345);
  int accepted = 0;
  for (int run = 0; run < 3000; ++run) {
    std::vector<uint64_t> at(1 + rng() % 4);
    for (uint64_t& pos : at) {
      pos = rng() % header;
      f.seekp(static_cast<std::streamoff>(pos));
      f.put(static_cast<char>(rng()));
    }
    f.flush();
    try {
      const File file = File::Open(path);
      ++accepted;
      for (const TensorInfo& t : file.tensors()) {
        ASSERT_LE(file.data_offset() + t.offset + static_cast<uint64_t>(t.bytes), file.size());
      }
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind(path + ": ", 0), 0u) << e.what();
    }
    for (uint64_t pos : at) {
      f.seekp(static_cast<std::streamoff>(pos));
      f.put(static_cast<char>(bytes[pos]));
    }
  }
  EXPECT_GT(accepted, 0);  // some changes only touch string contents
}

// --- The real model --------------------------------------------------------------------------

TEST(GgufSmolLM2, MatchesGgufPyFacts) {
  const char* cache_env = std::getenv("BACKPLANE_CACHE");
  const char* home = std::getenv("HOME");
  const std::string cache = cache_env != nullptr
                                ? cache_env
                                : std::string(home != nullptr ? home : "") + "/.cache/backplane";
  const nlohmann::json facts = ReadJson(GoldenPath("smollm2_facts.json"));
  const std::string path = cache + "/" + facts["file"].get<std::string>();
  ASSERT_TRUE(fs::exists(path)) << path << " is missing: run scripts/fetch-models.sh";

  const auto start = std::chrono::steady_clock::now();
  const File file = File::Open(path);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[ gguf     ] opened " << path << " in " << ms << " ms: " << file.tensors().size()
            << " tensors, " << file.metadata().size() << " keys\n";
  RecordProperty("open_ms", std::to_string(ms));

  EXPECT_EQ(file.size(), facts["file_size"].get<uint64_t>());
  EXPECT_EQ(file.version(), facts["version"].get<uint32_t>());
  EXPECT_EQ(file.metadata().size(), facts["kv_count"].get<size_t>());
  EXPECT_EQ(file.tensors().size(), facts["tensor_count"].get<size_t>());
  EXPECT_EQ(file.alignment(), facts["alignment"].get<uint64_t>());
  EXPECT_EQ(file.data_offset(), facts["data_offset"].get<uint64_t>());

  for (const auto& [key, want] : facts["metadata"].items()) {
    SCOPED_TRACE(key);
    const std::string type = want["type"];
    ASSERT_NE(file.Find(key), nullptr);
    EXPECT_EQ(ValueTypeName(file.Find(key)->type), type);
    if (type == "string") {
      EXPECT_EQ(file.GetString(key), want["value"].get<std::string>());
    } else if (type == "bool") {
      EXPECT_EQ(file.GetBool(key), want["value"].get<bool>());
    } else if (type == "f32") {
      EXPECT_EQ(file.GetFloat(key), want["value"].get<double>());
    } else {
      EXPECT_EQ(file.GetInt(key), want["value"].get<int64_t>());
    }
  }
  EXPECT_EQ(file.GetString("general.architecture"), "llama");
  EXPECT_EQ(file.GetInt("llama.block_count"), 30);
  EXPECT_EQ(file.GetInt("llama.embedding_length"), 576);
  EXPECT_EQ(file.GetInt("llama.attention.head_count"), 9);
  EXPECT_EQ(file.GetInt("llama.attention.head_count_kv"), 3);
  EXPECT_EQ(file.GetString("tokenizer.ggml.model"), "gpt2");

  const auto& tokens = file.GetStringArray("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), facts["token_count"].get<size_t>());
  const auto first = facts["tokens_first"].get<std::vector<std::string>>();
  EXPECT_EQ(std::vector<std::string>(tokens.begin(),
                                     tokens.begin() + static_cast<std::ptrdiff_t>(first.size())),
            first);
  EXPECT_EQ(tokens[1000], facts["token_1000"].get<std::string>());
  EXPECT_EQ(tokens.back(), facts["tokens_last"].get<std::string>());
  const auto& merges = file.GetStringArray("tokenizer.ggml.merges");
  ASSERT_EQ(merges.size(), facts["merge_count"].get<size_t>());
  EXPECT_EQ(merges[0], facts["merges_first"][0].get<std::string>());
  EXPECT_EQ(merges[2], facts["merges_first"][2].get<std::string>());
  const std::vector<int64_t> token_types = file.GetIntArray("tokenizer.ggml.token_type");
  ASSERT_EQ(token_types.size(), tokens.size());
  EXPECT_EQ(std::vector<int64_t>(token_types.begin(), token_types.begin() + 4),
            facts["token_type_first"].get<std::vector<int64_t>>());
  EXPECT_EQ(std::accumulate(token_types.begin(), token_types.end(), int64_t{0}),
            facts["token_type_sum"].get<int64_t>());

  for (const auto& [name, want] : facts["tensors"].items()) {
    SCOPED_TRACE(name);
    const TensorInfo& t = file.Tensor(name);
    EXPECT_EQ(static_cast<uint32_t>(t.format), want["ggml_type"].get<uint32_t>());
    EXPECT_EQ(t.dims, want["dims"].get<std::vector<int64_t>>());
    EXPECT_EQ(t.offset, want["offset"].get<uint64_t>());
    EXPECT_EQ(t.bytes, want["bytes"].get<int64_t>());
    const uint8_t* data = file.Data(t);
    const Bytes head = FromHex(want["first_bytes_hex"]);
    const Bytes tail = FromHex(want["last_bytes_hex"]);
    EXPECT_EQ(Bytes(data, data + head.size()), head);
    EXPECT_EQ(Bytes(data + t.bytes - static_cast<int64_t>(tail.size()), data + t.bytes), tail);
  }
  std::map<std::string, int> counts;
  for (const TensorInfo& t : file.tensors()) ++counts[std::string(BlockFormatName(t.format))];
  EXPECT_EQ(counts, (facts["format_counts"].get<std::map<std::string, int>>()));
}

// --- Crafted files ---------------------------------------------------------------------------

TEST(GgufCrafted, SmallValidFileOpens) {
  GgufTempDir dir;
  const File file = File::Open(dir.Write("small.gguf", SmallValidFile()));
  EXPECT_EQ(file.version(), 3u);
  EXPECT_EQ(file.alignment(), 32u);
  ASSERT_EQ(file.tensors().size(), 2u);
  EXPECT_EQ(file.Tensor("a").bytes, 32);
  EXPECT_EQ(file.Tensor("b").format, BlockFormat::Q8_0);
  EXPECT_EQ(file.Tensor("b").bytes, 34);
  EXPECT_EQ(file.data_offset() + 32 + 34, file.size());
  EXPECT_EQ(file.Data(file.Tensor("b"))[0], 33);  // data bytes count 1, 2, 3, ...
  EXPECT_EQ(file.GetStringArray("tiny.list"), (std::vector<std::string>{"ab", "c"}));
}

TEST(GgufCrafted, EveryTruncationThrows) {
  const Bytes bytes = SmallValidFile();
  GgufTempDir dir;
  const std::string path = dir.Write("cut.gguf", bytes);
  for (size_t length = bytes.size(); length-- > 0;) {
    fs::resize_file(path, length);
    try {
      File::Open(path);
      ADD_FAILURE() << "a cut at " << length << " of " << bytes.size() << " bytes was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
      EXPECT_EQ(std::string(e.what()).rfind(path + ": ", 0), 0u) << e.what();
    }
  }
}

TEST(GgufCrafted, OpenErrorsNameThePathAndTheReason) {
  GgufTempDir dir;
  const std::string missing = dir.Path("missing.gguf");
  try {
    File::Open(missing);
    ADD_FAILURE() << "opened a missing file";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), missing + ": open: No such file or directory");
  }
  try {
    File::Open(dir.Path(""));
    ADD_FAILURE() << "opened a directory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
  }
  ExpectOpenFails({}, {"magic", "needs 4 bytes"});
}

TEST(GgufCrafted, BadMagic) {
  Bytes bytes = SmallValidFile();
  bytes[3] = 'X';
  ExpectOpenFails(bytes, {"magic", "\"GGUF\"", "47 47 55 58"});
}

TEST(GgufCrafted, UnsupportedVersions) {
  ExpectOpenFails(MakeFile(0, {}, {}, 0, 32, 1), {"version", "got 1", "v1 is not supported"});
  ExpectOpenFails(MakeFile(0, {}, {}, 0, 32, 4), {"version", "must be 2 or 3, got 4"});
  ExpectOpenFails(MakeFile(0, {}, {}, 0, 32, 0x03000000), {"version", "big-endian"});
}

TEST(GgufCrafted, CountsLargerThanTheFile) {
  Builder b;
  b.U32(0x46554747).U32(3).U64(uint64_t{1} << 63).U64(0).Zeros(64);
  ExpectOpenFails(b.bytes(), {"tensor_count", "9223372036854775808"});
  Builder kv;
  kv.U32(0x46554747).U32(3).U64(0).U64(uint64_t{1} << 40).Zeros(64);
  ExpectOpenFails(kv.bytes(), {"metadata_kv_count", "1099511627776"});
}

TEST(GgufCrafted, StringLongerThanTheFile) {
  Builder key;
  key.U64(uint64_t{1} << 40).Zeros(16);
  ExpectOpenFails(MakeFile(1, key, {}, 0), {"metadata key 0", "string length 1099511627776"});
  Builder value;
  value.Str("general.name").U32(8).U64(1000).Zeros(16);
  ExpectOpenFails(MakeFile(1, value, {}, 0), {"key 'general.name'", "string length 1000"});
  Builder name;  // a header with one tensor whose name claims 2^62 bytes
  name.U32(0x46554747).U32(3).U64(1).U64(0).U64(uint64_t{1} << 62).Zeros(32);
  ExpectOpenFails(name.bytes(), {"tensor 0 name", "string length 4611686018427387904"});
}

TEST(GgufCrafted, ArrayCountsLargerThanTheFile) {
  Builder u64s;
  u64s.Str("big").U32(9).U32(10).U64(uint64_t{1} << 62).Zeros(64);  // 2^62 u64: 2^65 bytes
  ExpectOpenFails(MakeFile(1, u64s, {}, 0), {"key 'big'", "array of 4611686018427387904 u64"});
  Builder strings;
  strings.Str("strs").U32(9).U32(8).U64(100).Zeros(64);  // 100 strings need >= 800 bytes
  ExpectOpenFails(MakeFile(1, strings, {}, 0), {"key 'strs'", "array of 100 string"});
  Builder nested;
  nested.Str("nest").U32(9).U32(9).U64(uint64_t{1} << 61).Zeros(64);
  ExpectOpenFails(MakeFile(1, nested, {}, 0), {"key 'nest'", "array of 2305843009213693952 array"});
}

TEST(GgufCrafted, BadValues) {
  Builder type;
  type.Str("t").U32(13).U32(0);
  ExpectOpenFails(MakeFile(1, type, {}, 0), {"key 't' value type", "13 is not a GGUF value type"});
  Builder element;
  element.Str("e").U32(9).U32(77).U64(1).U32(0);
  ExpectOpenFails(MakeFile(1, element, {}, 0), {"key 'e' element type", "77"});
  Builder boolean;
  boolean.Str("flag").U32(7).U8(2);
  ExpectOpenFails(MakeFile(1, boolean, {}, 0), {"key 'flag'", "bool must be 0 or 1, got 2"});
  Builder bool_array;
  bool_array.Str("flags").U32(9).U32(7).U64(3).U8(1).U8(0).U8(5);
  ExpectOpenFails(MakeFile(1, bool_array, {}, 0), {"key 'flags'[2]", "got 5"});
}

TEST(GgufCrafted, NestingDepthIsLimited) {
  auto nested = [](int levels) {
    Builder b;
    b.Str("deep").U32(9);
    for (int k = 1; k < levels; ++k) b.U32(9).U64(1);  // an array holding one array
    b.U32(4).U64(1).U32(42);                           // the innermost: one u32
    return b;
  };
  GgufTempDir dir;
  const File ok = File::Open(dir.Write("ok.gguf", MakeFile(1, nested(16), {}, 0)));
  const Value* v = ok.Find("deep");
  ASSERT_NE(v, nullptr);
  for (int k = 1; k < 16; ++k) {
    ASSERT_EQ(v->arrays.size(), 1u);
    v = &v->arrays[0];
  }
  EXPECT_EQ(v->uints, std::vector<uint64_t>{42});
  ExpectOpenFails(MakeFile(1, nested(17), {}, 0), {"key 'deep'", "nested deeper than 16"});
}

TEST(GgufCrafted, EmptyArraysZeroDimsAndScalars) {
  Builder kvs;
  kvs.Str("empty").U32(9).U32(6).U64(0);
  GgufTempDir dir;
  const File file = File::Open(dir.Write(
      "edge.gguf",
      MakeFile(1, kvs, {{"zero", {0, 4}, kQ8_0, 0}, {"scalar", {}, kF32, 0}, {"v", {8}, kF32, 32}},
               64)));
  EXPECT_EQ(file.Find("empty")->array_size, 0u);
  EXPECT_EQ(file.GetFloatArray("empty"), std::vector<double>{});
  const TensorInfo& zero = file.Tensor("zero");
  EXPECT_EQ(zero.elements, 0);
  EXPECT_EQ(zero.bytes, 0);
  const TensorInfo& scalar = file.Tensor("scalar");
  EXPECT_TRUE(scalar.dims.empty());
  EXPECT_EQ(scalar.elements, 1);
  EXPECT_EQ(scalar.bytes, 4);
  EXPECT_EQ(file.Tensor("v").bytes, 32);
}

TEST(GgufCrafted, BadTensorShapes) {
  ExpectOpenFails(MakeFile(0, {}, {{"w", {1, 1, 1, 1, 1}, kF32, 0}}, 32),
                  {"tensor 'w' n_dims", "must be <= 4", "got 5"});
  ExpectOpenFails(MakeFile(0, {}, {{"w", {uint64_t{1} << 32, uint64_t{1} << 32}, kF32, 0}}, 32),
                  {"tensor 'w' dims",
                   "element count overflows int64 at dims[1] (dims [4294967296, 4294967296])"});
  ExpectOpenFails(MakeFile(0, {}, {{"w", {uint64_t{1} << 62}, kF32, 0}}, 32),
                  {"tensor 'w' dims", "take more than INT64_MAX bytes"});
  ExpectOpenFails(MakeFile(0, {}, {{"w", {uint64_t{1} << 63}, kF32, 0}}, 32),
                  {"tensor 'w' dims[0]", "must be <= INT64_MAX, got 9223372036854775808"});
  ExpectOpenFails(MakeFile(0, {}, {{"w", {33, 2}, kQ8_0, 0}}, 128),
                  {"tensor 'w' dims[0]", "multiple of 32 (the q8_0 block size), got 33"});
  ExpectOpenFails(MakeFile(0, {}, {{"w", {4}, 99, 0}}, 32),
                  {"tensor 'w' type", "ggml type 99 is unknown", "q4_1 (3)"});
}

TEST(GgufCrafted, BadTensorPlacement) {
  ExpectOpenFails(MakeFile(0, {}, {{"w", {16}, kF32, 0}}, 32),
                  {"tensor 'w' data", "[offset 0, 64 bytes] runs past the end of the file"});
  ExpectOpenFails(MakeFile(0, {}, {{"w", {4}, kF32, uint64_t{1} << 63}}, 32),
                  {"tensor 'w' data", "runs past the end of the file"});
  ExpectOpenFails(MakeFile(0, {}, {{"a", {16}, kF32, 0}, {"b", {16}, kF32, 32}}, 128),
                  {"tensor 'b' data", "overlaps tensor 'a' [offset 0, 64 bytes]"});
  // b lies inside a; c starts inside a but after b ends.
  ExpectOpenFails(
      MakeFile(0, {}, {{"a", {64}, kF32, 0}, {"c", {8}, kF32, 128}, {"b", {8}, kF32, 64}}, 512),
      {"overlaps tensor 'a'"});
  ExpectOpenFails(MakeFile(0, {}, {{"w", {4}, kF32, 4}}, 64),
                  {"tensor 'w' offset", "multiple of the alignment 32, got 4"});
  // The padding to the data section runs past the end of the file.
  Bytes no_padding = MakeFile(0, {}, {{"w", {0}, kF32, 0}}, 0);
  while (no_padding.size() % 32 == 0) no_padding.pop_back();
  ExpectOpenFails(no_padding, {"data_offset", "past the end of the file"});
}

TEST(GgufCrafted, BadAlignment) {
  for (uint32_t alignment : {0u, 3u, 48u}) {
    Builder kvs;
    kvs.KeyU32("general.alignment", alignment);
    ExpectOpenFails(MakeFile(1, kvs, {}, 0),
                    {"general.alignment", fmt::format("non-zero power of two, got {}", alignment)});
  }
  Builder typed;
  typed.KeyI32("general.alignment", 64);
  ExpectOpenFails(MakeFile(1, typed, {}, 0), {"general.alignment", "must be a u32, got i32"});
  // A custom alignment is applied to the data section and to the tensor offsets.
  Builder kvs;
  kvs.KeyU32("general.alignment", 128);
  GgufTempDir dir;
  const File file =
      File::Open(dir.Write("a128.gguf", MakeFile(1, kvs, {{"w", {4}, kF32, 128}}, 144, 128)));
  EXPECT_EQ(file.alignment(), 128u);
  EXPECT_EQ(file.data_offset() % 128, 0u);
  ExpectOpenFails(MakeFile(1, kvs, {{"w", {4}, kF32, 64}}, 144, 128),
                  {"tensor 'w' offset", "multiple of the alignment 128, got 64"});
}

TEST(GgufCrafted, Duplicates) {
  Builder kvs;
  kvs.KeyStr("general.architecture", "a").KeyU32("x", 1).KeyStr("general.architecture", "b");
  ExpectOpenFails(MakeFile(3, kvs, {}, 0),
                  {"key 'general.architecture'", "duplicate metadata key (pairs 0 and 2)"});
  ExpectOpenFails(MakeFile(0, {}, {{"w", {4}, kF32, 0}, {"w", {4}, kF32, 32}}, 64),
                  {"tensor 'w'", "duplicate tensor name (tensors 0 and 1)"});
}

TEST(GgufCrafted, HostileNamesStayOnOneLine) {
  Builder kvs;
  kvs.Str("evil\nkey").U32(13);
  ExpectOpenFails(MakeFile(1, kvs, {}, 0), {"key 'evil\\x0akey'"});
  ExpectOpenFails(MakeFile(0, {}, {{std::string(500, 'n'), {4}, 99, 0}}, 32),
                  {"...' (500 bytes) type"});
}

TEST(GgufCrafted, DefaultFileThrows) {
  const File file;
  EXPECT_THROW(static_cast<void>(file.tensors()), Error);
  EXPECT_THROW(static_cast<void>(file.Find("x")), Error);
}

}  // namespace
}  // namespace backplane::gguf
