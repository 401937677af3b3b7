// The .npy / .safetensors codecs against files written by NumPy and by an independent Python
// encoder (tests/golden/gen_io.py).
#include "backplane/io.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backplane/error.hpp"
#include "support/test_support.hpp"

namespace backplane::io {
namespace {

std::string Golden(const std::string& name) { return test::GoldenPath("io/" + name); }

const nlohmann::json& Expected() {
  static const nlohmann::json j = [] {
    std::ifstream f(Golden("expected.json"));
    return nlohmann::json::parse(f);
  }();
  return j;
}

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / fmt::format("bp_io_{}_{}", ::getpid(), name)).string();
}

std::string FileBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

void ExpectMatches(const Tensor& t, const nlohmann::json& want, bool complex = false) {
  ASSERT_EQ(t.shape(), want["shape"].get<Shape>());
  const auto& values = want["values"];
  ASSERT_EQ(static_cast<int64_t>(values.size()), t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (complex) {
      const double* p = nullptr;
      double re, im;
      if (t.dtype() == DType::Complex64) {
        re = static_cast<const float*>(t.data())[2 * i];
        im = static_cast<const float*>(t.data())[2 * i + 1];
      } else {
        p = static_cast<const double*>(t.data());
        re = p[2 * i];
        im = p[2 * i + 1];
      }
      EXPECT_EQ(re, values[static_cast<size_t>(i)][0].get<double>());
      EXPECT_EQ(im, values[static_cast<size_t>(i)][1].get<double>());
    } else {
      EXPECT_EQ(t.GetDouble(i), values[static_cast<size_t>(i)].get<double>()) << "element " << i;
    }
  }
}

TEST(Npy, ReadsEveryNumpyDtype) {
  const std::pair<const char*, DType> cases[] = {
      {"f64", DType::Float64}, {"f32", DType::Float32}, {"f16", DType::Float16},  {"i64", DType::Int64},
      {"i32", DType::Int32},   {"i16", DType::Int16},   {"i8", DType::Int8},      {"u64", DType::Uint64},
      {"u32", DType::Uint32},  {"u16", DType::Uint16},  {"u8", DType::Uint8},     {"bool", DType::Bool},
      {"bf16", DType::BFloat16}, {"scalar_f32", DType::Float32}, {"empty_f32", DType::Float32},
      {"i32_big_endian", DType::Int32}, {"f64_fortran", DType::Float64}};
  for (const auto& [name, dtype] : cases) {
    SCOPED_TRACE(name);
    const Tensor t = ReadNpy(Golden(std::string(name) + ".npy"));
    EXPECT_EQ(t.dtype(), dtype);
    ExpectMatches(t, Expected()[name]);
  }
  ExpectMatches(ReadNpy(Golden("c64.npy")), Expected()["c64"], true);
  ExpectMatches(ReadNpy(Golden("c128.npy")), Expected()["c128"], true);
}

TEST(Npy, WritesTheBytesNumpyWrites) {
  for (const char* name : {"f64", "f32", "f16", "i64", "i8", "u8", "bool", "c64", "scalar_f32", "empty_f32", "bf16"}) {
    SCOPED_TRACE(name);
    const std::string golden = Golden(std::string(name) + ".npy");
    const Tensor t = ReadNpy(golden);
    const std::string out = TempPath(std::string(name) + ".npy");
    WriteNpy(out, t);
    EXPECT_EQ(FileBytes(out), FileBytes(golden));
    std::filesystem::remove(out);
  }
}

TEST(Npy, RejectsBadFiles) {
  const std::string path = TempPath("bad.npy");
  {
    std::ofstream f(path, std::ios::binary);
    f << "not numpy at all";
  }
  EXPECT_TRUE(test::ThrowsError([&] { ReadNpy(path); }, ErrorCode::InvalidArgument, {path, "magic"}));
  // Truncated data: drop the last byte of a valid file.
  std::string bytes = FileBytes(Golden("f32.npy"));
  bytes.pop_back();
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << bytes;
  }
  EXPECT_TRUE(test::ThrowsError([&] { ReadNpy(path); }, ErrorCode::InvalidArgument, {path, "truncated"}));
  EXPECT_TRUE(test::ThrowsError([&] { ReadNpy(TempPath("missing.npy")); }, ErrorCode::InvalidArgument, {"cannot open"}));
  std::filesystem::remove(path);
  // int4 has no NumPy type: a clear error and no file.
  const std::string out = TempPath("int4.npy");
  EXPECT_TRUE(test::ThrowsError([&] { WriteNpy(out, Tensor(DType::Int4, {4})); }, ErrorCode::InvalidArgument,
                                {"i4", ".npy"}));
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(Safetensors, ReadsAndRoundTrips) {
  const auto tensors = ReadSafetensors(Golden("params.safetensors"));
  ASSERT_EQ(tensors.size(), 4u);
  EXPECT_EQ(tensors.at("w").dtype(), DType::Float32);
  EXPECT_EQ(tensors.at("b").dtype(), DType::Float16);
  EXPECT_EQ(tensors.at("ids").dtype(), DType::Int64);
  EXPECT_EQ(tensors.at("mask").dtype(), DType::Bool);
  for (const auto& [name, t] : tensors) {
    SCOPED_TRACE(name);
    ExpectMatches(t, Expected()["safetensors"][name]);
  }
  const std::string out = TempPath("round.safetensors");
  std::map<std::string, Tensor> more = tensors;
  more["bf"] = Tensor::FromDoubles(DType::BFloat16, {2}, std::vector<double>{1.5, -3.0});
  more["e4"] = Tensor::FromDoubles(DType::Float8E4M3, {1}, std::vector<double>{0.5});
  WriteSafetensors(out, more, {{"note", "test"}});
  const auto back = ReadSafetensors(out);
  ASSERT_EQ(back.size(), more.size());
  for (const auto& [name, t] : more) {
    SCOPED_TRACE(name);
    EXPECT_EQ(back.at(name).dtype(), t.dtype());
    EXPECT_EQ(back.at(name).shape(), t.shape());
    EXPECT_EQ(back.at(name).ToDoubles(), t.ToDoubles());
  }
  std::filesystem::remove(out);
}

TEST(Safetensors, RejectsTruncatedFiles) {
  std::string bytes = FileBytes(Golden("params.safetensors"));
  const std::string path = TempPath("trunc.safetensors");
  {
    std::ofstream f(path, std::ios::binary);
    f << bytes.substr(0, bytes.size() - 3);
  }
  EXPECT_TRUE(test::ThrowsError([&] { ReadSafetensors(path); }, ErrorCode::InvalidArgument, {path, "truncated"}));
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << bytes.substr(0, 5);
  }
  EXPECT_TRUE(test::ThrowsError([&] { ReadSafetensors(path); }, ErrorCode::InvalidArgument, {path}));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace backplane::io
