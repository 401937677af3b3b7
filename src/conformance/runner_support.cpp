#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "backplane/convert.hpp"
#include "backplane/random.hpp"
#include "conformance/runner.hpp"

namespace backplane::conformance {

double LoadAsDouble(const std::vector<uint8_t>& s, DType dtype, int64_t i) {
  const auto k = static_cast<size_t>(i);
  switch (dtype) {
    case DType::Float64: {
      double v;
      std::memcpy(&v, s.data() + 8 * k, 8);
      return v;
    }
    case DType::Float32: {
      float v;
      std::memcpy(&v, s.data() + 4 * k, 4);
      return v;
    }
    case DType::Float16:
    case DType::BFloat16: {
      uint16_t v;
      std::memcpy(&v, s.data() + 2 * k, 2);
      return dtype == DType::Float16 ? F16ToF32(v) : BF16ToF32(v);
    }
    case DType::Int8: return static_cast<int8_t>(s[k]);
    case DType::Uint8: return s[k];
    case DType::Int4: return LoadInt4(s.data(), i);
    default: return 0.0;
  }
}

std::vector<uint8_t> RandomStorage(DType dtype, int64_t count, uint64_t seed, double scale, bool specials) {
  std::vector<uint8_t> s(DTypeStorageBytes(dtype, count) + 8, 0);
  for (int64_t i = 0; i < count; ++i) {
    const auto idx = static_cast<uint64_t>(i);
    const double u1 = 1.0 - PhiloxUniformDouble(seed, 11, idx);
    const double u2 = PhiloxUniformDouble(seed, 12, idx);
    double v = scale * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    if (specials && i % 97 == 13) {
      static constexpr double kSpecial[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 60.0, -60.0, 1e-30};
      v = kSpecial[(i / 97) % 8];
    }
    const auto k = static_cast<size_t>(i);
    switch (dtype) {
      case DType::Float64: std::memcpy(s.data() + 8 * k, &v, 8); break;
      case DType::Float32: {
        const float f = static_cast<float>(v);
        std::memcpy(s.data() + 4 * k, &f, 4);
        break;
      }
      case DType::Float16:
      case DType::BFloat16: {
        const uint16_t h = dtype == DType::Float16 ? F32ToF16(static_cast<float>(v)) : F32ToBF16(static_cast<float>(v));
        std::memcpy(s.data() + 2 * k, &h, 2);
        break;
      }
      case DType::Int8: s[k] = static_cast<uint8_t>(PhiloxBits(seed, 13, idx)[0] & 0xFF); break;
      case DType::Uint8: s[k] = static_cast<uint8_t>(PhiloxBits(seed, 13, idx)[0] & 0xFF); break;
      case DType::Int4: StoreInt4(s.data(), i, static_cast<int>(PhiloxBits(seed, 13, idx)[0] % 16) - 8); break;
      default: break;
    }
  }
  return s;
}

namespace {

// Compares one value; `where` and `index` name it in the note, formatted only on failure.
void CompareOne(double got, double want, Tolerance tol, const std::string& where, int64_t index, Measure& m) {
  auto fail = [&] {
    if (!m.ok) return;
    m.ok = false;
    m.note = index < 0 ? fmt::format("{}: got {}, want {}", where, got, want)
                       : fmt::format("{}[{}]: got {}, want {}", where, index, got, want);
  };
  if (std::isnan(got) && std::isnan(want)) return;
  if (std::isinf(want) || std::isinf(got)) {
    if (got != want) {
      fail();
      m.max_error = INFINITY;
    }
    return;
  }
  const double err = std::fabs(got - want);
  if (!(err <= m.max_error)) m.max_error = std::isnan(err) ? INFINITY : std::max(m.max_error, err);
  if (!(err <= tol.abs + tol.rel * std::fabs(want))) fail();
}

}  // namespace

void CompareScalar(double got, double want, Tolerance tol, const std::string& where, Measure& m) {
  CompareOne(got, want, tol, where, -1, m);
}

void CompareStorage(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want, DType dtype, int64_t count,
                    Tolerance tol, const std::string& where, Measure& m) {
  for (int64_t i = 0; i < count; ++i) {
    CompareOne(LoadAsDouble(got, dtype, i), LoadAsDouble(want, dtype, i), tol, where, i, m);
  }
}

bool RunBoth(const std::function<void()>& reference, const std::function<void()>& fast, const std::string& where,
             Measure& m) {
  std::string ref_error, fast_error;
  bool ref_threw = false, fast_threw = false;
  try {
    reference();
  } catch (const std::exception& e) {
    ref_threw = true;
    ref_error = e.what();
  }
  try {
    fast();
  } catch (const std::exception& e) {
    fast_threw = true;
    fast_error = e.what();
  }
  if (ref_threw != fast_threw || ref_error != fast_error) {
    if (m.ok) {
      m.ok = false;
      m.note = fmt::format("{}: reference {}, fast kernel {}", where, ref_threw ? "threw '" + ref_error + "'" : "returned",
                           fast_threw ? "threw '" + fast_error + "'" : "returned");
    }
    return false;
  }
  return !ref_threw;
}

}  // namespace backplane::conformance
