// Test helpers: seeded random buffers in any floating storage format, poisoned outputs, error
// matchers and per-dtype tolerances.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backplane/convert.hpp"
#include "backplane/dtype.hpp"
#include "backplane/error.hpp"
#include "backplane/tolerance.hpp"

namespace backplane::test {

// The floating storage formats every floating-point method accepts.
inline const std::vector<DType>& FloatDTypes() {
  static const std::vector<DType> all = {DType::Float32, DType::Float64, DType::Float16,
                                         DType::BFloat16};
  return all;
}

// A typed byte buffer holding `count` elements of `dtype`.
class Buffer {
 public:
  Buffer(DType dtype, int64_t count)
      : dtype_(dtype), count_(count), bytes_(DTypeStorageBytes(dtype, count) + 16, 0) {}
  DType dtype() const { return dtype_; }
  int64_t count() const { return count_; }
  void* data() { return bytes_.data(); }
  const void* data() const { return bytes_.data(); }
  template <class T>
  T* as() { return reinterpret_cast<T*>(bytes_.data()); }

  // Element i as double (floating formats only).
  double Get(int64_t i) const;
  // Stores v rounded to the storage format.
  void Set(int64_t i, double v);
  std::vector<double> ToDoubles() const;
  // Fills every byte, including 16 guard bytes past the end, with `byte` (0xA5 by default).
  void Poison(uint8_t byte = 0xA5) { std::memset(bytes_.data(), byte, bytes_.size()); }
  bool IsPoisoned(uint8_t byte = 0xA5) const;
  // The 16 bytes past the last element still hold the poison byte.
  bool GuardIntact(uint8_t byte = 0xA5) const;

 private:
  DType dtype_;
  int64_t count_;
  std::vector<uint8_t> bytes_;
};

// Uniform values in [lo, hi), rounded to the storage format, from a fixed seed.
Buffer RandomBuffer(DType dtype, int64_t count, uint64_t seed, double lo = -4.0, double hi = 4.0);
Buffer FromDoubles(DType dtype, const std::vector<double>& values);

// Tolerances for comparing a storage-format result against a float64 oracle come from the one
// table in backplane/tolerance.hpp (DefaultTolerance).
using backplane::DefaultTolerance;
using backplane::Tolerance;

// Compares every element against a float64 oracle; returns the failures as a message.
::testing::AssertionResult AllClose(const Buffer& got, const std::vector<double>& want,
                                    Tolerance tol);
::testing::AssertionResult Close(double got, double want, Tolerance tol);

// Runs fn and checks it throws backplane::Error with `code` whose message contains every
// fragment (e.g. the op name and the argument name).
template <class Fn>
::testing::AssertionResult ThrowsError(Fn&& fn, ErrorCode code,
                                       std::initializer_list<std::string> fragments) {
  try {
    fn();
  } catch (const Error& e) {
    if (e.code() != code) {
      return ::testing::AssertionFailure()
             << "wrong code " << ErrorCodeName(e.code()) << ": " << e.what();
    }
    const std::string what = e.what();
    for (const std::string& f : fragments) {
      if (what.find(f) == std::string::npos) {
        return ::testing::AssertionFailure() << "message lacks '" << f << "': " << what;
      }
    }
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw a non-backplane exception: " << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}

// Path of a committed golden-data file: tests/golden/data/<name>.
std::string GoldenPath(const std::string& name);

}  // namespace backplane::test
