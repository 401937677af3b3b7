#include "support/test_support.hpp"

#include <sstream>

namespace backplane::test {

double Buffer::Get(int64_t i) const {
  switch (dtype_) {
    case DType::Float64: return reinterpret_cast<const double*>(bytes_.data())[i];
    case DType::Float32: return reinterpret_cast<const float*>(bytes_.data())[i];
    case DType::Float16: return F16ToF32(reinterpret_cast<const uint16_t*>(bytes_.data())[i]);
    case DType::BFloat16: return BF16ToF32(reinterpret_cast<const uint16_t*>(bytes_.data())[i]);
    default: ADD_FAILURE() << "Buffer::Get on non-floating dtype " << DTypeName(dtype_); return 0;
  }
}

void Buffer::Set(int64_t i, double v) {
  switch (dtype_) {
    case DType::Float64: reinterpret_cast<double*>(bytes_.data())[i] = v; return;
    case DType::Float32: reinterpret_cast<float*>(bytes_.data())[i] = static_cast<float>(v); return;
    case DType::Float16:
      reinterpret_cast<uint16_t*>(bytes_.data())[i] = F32ToF16(static_cast<float>(v));
      return;
    case DType::BFloat16:
      reinterpret_cast<uint16_t*>(bytes_.data())[i] = F32ToBF16(static_cast<float>(v));
      return;
    default: ADD_FAILURE() << "Buffer::Set on non-floating dtype " << DTypeName(dtype_);
  }
}

std::vector<double> Buffer::ToDoubles() const {
  std::vector<double> out(static_cast<size_t>(count_));
  for (int64_t i = 0; i < count_; ++i) out[static_cast<size_t>(i)] = Get(i);
  return out;
}

bool Buffer::IsPoisoned(uint8_t byte) const {
  for (uint8_t b : bytes_) {
    if (b != byte) return false;
  }
  return true;
}

bool Buffer::GuardIntact(uint8_t byte) const {
  for (size_t i = bytes_.size() - 16; i < bytes_.size(); ++i) {
    if (bytes_[i] != byte) return false;
  }
  return true;
}

Buffer RandomBuffer(DType dtype, int64_t count, uint64_t seed, double lo, double hi) {
  Buffer b(dtype, count);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int64_t i = 0; i < count; ++i) b.Set(i, dist(rng));
  return b;
}

Buffer FromDoubles(DType dtype, const std::vector<double>& values) {
  Buffer b(dtype, static_cast<int64_t>(values.size()));
  for (size_t i = 0; i < values.size(); ++i) b.Set(static_cast<int64_t>(i), values[i]);
  return b;
}

::testing::AssertionResult Close(double got, double want, Tolerance tol) {
  if (std::isnan(want) && std::isnan(got)) return ::testing::AssertionSuccess();
  if (std::isinf(want) && got == want) return ::testing::AssertionSuccess();
  const double err = std::fabs(got - want);
  if (err <= tol.abs + tol.rel * std::fabs(want)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got " << got << ", want " << want << " (error " << err
                                       << ")";
}

::testing::AssertionResult AllClose(const Buffer& got, const std::vector<double>& want,
                                    Tolerance tol) {
  if (got.count() != static_cast<int64_t>(want.size())) {
    return ::testing::AssertionFailure()
           << "size " << got.count() << " != expected " << want.size();
  }
  std::ostringstream failures;
  int bad = 0;
  for (int64_t i = 0; i < got.count(); ++i) {
    const auto r = Close(got.Get(i), want[static_cast<size_t>(i)], tol);
    if (!r) {
      if (bad < 8) failures << "\n  [" << i << "] " << r.message();
      ++bad;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << got.count() << " elements differ ("
                                       << DTypeName(got.dtype()) << ")" << failures.str();
}

std::string GoldenPath(const std::string& name) {
  return std::string(BACKPLANE_SOURCE_DIR) + "/tests/golden/data/" + name;
}

}  // namespace backplane::test
