// Shared by the TensorOps golden tests (tensor_ops_axis_test.cpp, tensor_ops_index_test.cpp): golden
// file loading, storage of JSON values in a dtype, bit-exact comparison, and the two kernel paths.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backplane/backend/tensor_ops.hpp"
#include "backplane/convert.hpp"
#include "backplane/cpu/cpu_backend.hpp"
#include "cpu/reference/reference.hpp"
#include "support/test_support.hpp"

namespace backplane::tensor_ops_golden {

using nlohmann::json;

inline TensorOpsSurface& Fast() {
  static const std::unique_ptr<Backend> backend = cpu::CreateBackend();
  return backend->TensorOps();
}
inline const cpu::KernelTable& Ref() { return cpu::ref::Table(); }

// The parsed golden file `name` (under tests/golden).
inline json ReadGolden(const std::string& name) {
  std::ifstream in(test::GoldenPath(name));
  if (!in.good()) throw std::runtime_error("missing golden file " + name);
  return json::parse(in);
}

inline double JsonDouble(const json& v) {
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "nan") return NAN;
    return s == "inf" ? INFINITY : -INFINITY;
  }
  return v.get<double>();
}

// Storage of `values` in dtype (floats exact in the dtype; integers by their low bytes).
inline std::vector<uint8_t> Storage(DType dt, const json& values) {
  std::vector<uint8_t> s(DTypeStorageBytes(dt, static_cast<int64_t>(values.size())) + 16, 0xA5);
  for (size_t i = 0; i < values.size(); ++i) {
    const auto at = static_cast<int64_t>(i);
    switch (dt) {
      case DType::Float64: {
        const double v = JsonDouble(values[i]);
        std::memcpy(s.data() + 8 * i, &v, 8);
        break;
      }
      case DType::Float32: {
        const auto v = static_cast<float>(JsonDouble(values[i]));
        std::memcpy(s.data() + 4 * i, &v, 4);
        break;
      }
      case DType::Float16:
      case DType::BFloat16: {
        const auto f = static_cast<float>(JsonDouble(values[i]));
        const uint16_t h = dt == DType::Float16 ? F32ToF16(f) : F32ToBF16(f);
        std::memcpy(s.data() + 2 * i, &h, 2);
        break;
      }
      case DType::Bool: StoreBool(s.data(), at, values[i].get<int>() != 0); break;
      default: {
        const uint64_t v = values[i].is_number_unsigned() ? values[i].get<uint64_t>()
                                                           : static_cast<uint64_t>(values[i].get<int64_t>());
        const auto bytes = static_cast<size_t>(DTypeBits(dt) / 8);
        std::memcpy(s.data() + bytes * i, &v, bytes);
      }
    }
  }
  return s;
}

// Element i equals the golden value exactly (NaN matches NaN; the sign of zero counts).
inline ::testing::AssertionResult SameElements(const std::vector<uint8_t>& got, DType dt, const json& want) {
  const std::vector<uint8_t> expect = Storage(dt, want);
  const size_t bytes = DTypeStorageBytes(dt, static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    if (IsFloatingPoint(dt)) {
      // Compare as double so that any NaN matches any NaN.
      double g = 0, w = 0;
      auto load = [&](const std::vector<uint8_t>& s) {
        switch (dt) {
          case DType::Float64: { double v; std::memcpy(&v, s.data() + 8 * i, 8); return v; }
          case DType::Float32: { float v; std::memcpy(&v, s.data() + 4 * i, 4); return static_cast<double>(v); }
          default: {
            uint16_t h;
            std::memcpy(&h, s.data() + 2 * i, 2);
            return static_cast<double>(dt == DType::Float16 ? F16ToF32(h) : BF16ToF32(h));
          }
        }
      };
      g = load(got);
      w = load(expect);
      if (std::isnan(g) && std::isnan(w)) continue;
      if (g != w || std::signbit(g) != std::signbit(w)) {
        return ::testing::AssertionFailure() << "element " << i << ": got " << g << ", want " << w;
      }
    } else if (dt == DType::Bool) {
      if (LoadBool(got.data(), static_cast<int64_t>(i)) != LoadBool(expect.data(), static_cast<int64_t>(i))) {
        return ::testing::AssertionFailure() << "element " << i << " differs";
      }
    }
  }
  if (!IsFloatingPoint(dt) && dt != DType::Bool && std::memcmp(got.data(), expect.data(), bytes) != 0) {
    size_t b = 0;
    while (got[b] == expect[b]) ++b;
    return ::testing::AssertionFailure() << "byte " << b << " differs";
  }
  for (size_t b = bytes; b < bytes + 8 && dt != DType::Bool; ++b) {
    if (got[b] != 0xA5) return ::testing::AssertionFailure() << "guard byte " << b - bytes << " written";
  }
  return ::testing::AssertionSuccess();
}

inline DType DTypeOf(const json& c) { return *DTypeFromName(c.at("dtype").get<std::string>()); }

// Runs fn(useFast) for the reference table and the Backend.
template <class Fn>
inline void BothKernels(Fn&& fn) {
  fn(false);
  fn(true);
}

}  // namespace backplane::tensor_ops_golden
