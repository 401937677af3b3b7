#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include "backplane/convert.hpp"
#include "backplane/cpu/threads.hpp"
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
      case DType::Float64:
      case DType::Float32:
      case DType::Float16:
      case DType::BFloat16: StoreAsDouble(s, dtype, i, v); break;
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

namespace {

// 0: both returned; 1: both threw the same message; -1: they differ (recorded in m).
int Parity(const std::function<void()>& reference, const std::function<void()>& fast, const std::string& where,
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
    return -1;
  }
  return ref_threw ? 1 : 0;
}

}  // namespace

bool RunBoth(const std::function<void()>& reference, const std::function<void()>& fast, const std::string& where,
             Measure& m) {
  return Parity(reference, fast, where, m) == 0;
}

bool RunBoth(const std::function<void()>& reference, const std::function<void()>& fast,
             const std::vector<uint8_t>& fast_out, const std::string& where, Measure& m) {
  const std::vector<uint8_t> before = fast_out;
  const int parity = Parity(reference, fast, where, m);
  if (parity == 1 && fast_out != before) Fail(m, where + ": the fast kernel wrote before throwing");
  return parity == 0;
}

void Fail(Measure& m, const std::string& note) {
  if (m.ok) m.note = note;
  m.ok = false;
}

bool SameErrors(const std::string& got, const std::string& want, const std::string& where, Measure& m) {
  if (got != want) {
    Fail(m, fmt::format("{}: error mismatch: got '{}', want '{}'", where, got, want));
    return true;
  }
  return !want.empty();
}

bool Quick(const RunContext& c) { return c.sizes.empty() || c.sizes.back() < 4096; }

QuickThreads::QuickThreads(const RunContext& c) : previous_(cpu::NumThreads()), active_(Quick(c)) {
  if (active_) cpu::SetNumThreads(1);
}

QuickThreads::~QuickThreads() {
  if (active_) cpu::SetNumThreads(previous_);
}

std::vector<int64_t> WithLarge(std::vector<int64_t> sizes) {
  sizes.push_back(kLarge);
  return sizes;
}

const std::vector<uint8_t>& Inputs(const RunContext& c, DType dtype, int64_t n, uint64_t seed, double scale,
                                   bool specials) {
  static std::mutex mu;
  static std::string method;
  static std::map<std::tuple<DType, int64_t, uint64_t, double, bool>, std::vector<uint8_t>> cache;
  const std::lock_guard<std::mutex> lock(mu);
  if (method != c.method) {
    cache.clear();
    method = c.method;
  }
  const auto key = std::make_tuple(dtype, n, seed, scale, specials);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, RandomStorage(dtype, n, seed, scale, specials)).first;
  return it->second;
}

size_t Offset(DType dtype, int64_t n) { return n % 2 == 1 ? DTypeStorageBytes(dtype, 1) : 0; }

std::vector<uint8_t> Shifted(const std::vector<uint8_t>& s, size_t offset) {
  std::vector<uint8_t> out(s.size() + offset, kGuard);
  std::copy(s.begin(), s.end(), out.begin() + static_cast<std::ptrdiff_t>(offset));
  return out;
}

std::vector<uint8_t> Unshifted(const std::vector<uint8_t>& s, size_t offset) {
  return std::vector<uint8_t>(s.begin() + static_cast<std::ptrdiff_t>(offset), s.end());
}

void StoreAsDouble(std::vector<uint8_t>& s, DType dtype, int64_t i, double v) {
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
      const float f = static_cast<float>(v);
      const uint16_t h = dtype == DType::Float16 ? F32ToF16(f) : F32ToBF16(f);
      std::memcpy(s.data() + 2 * k, &h, 2);
      break;
    }
    default: break;
  }
}

std::vector<double> Widened(const std::vector<uint8_t>& s, DType dtype, int64_t count) {
  std::vector<double> v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) v[static_cast<size_t>(i)] = LoadAsDouble(s, dtype, i);
  return v;
}

void CompareElements(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want, DType dtype, int64_t count,
                     Tolerance tol, const std::string& where, Measure& m) {
  for (int64_t i = 0; i < count; ++i) {
    const double g = LoadAsDouble(got, dtype, i), w = LoadAsDouble(want, dtype, i);
    if ((std::isnan(g) && std::isnan(w)) || (std::isinf(w) && g == w)) continue;
    const double err = std::fabs(g - w);
    if (std::isfinite(g) && std::isfinite(w) && err <= tol.abs + tol.rel * std::fabs(w)) {
      m.max_error = std::max(m.max_error, err);
    } else {
      CompareScalar(g, w, tol, fmt::format("{}[{}]", where, i), m);
    }
  }
}

void CompareBounded(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want, DType dtype,
                    const std::vector<double>& cond, Tolerance tol, const std::string& where, Measure& m) {
  for (size_t i = 0; i < cond.size(); ++i) {
    const double g = LoadAsDouble(got, dtype, static_cast<int64_t>(i));
    const double w = LoadAsDouble(want, dtype, static_cast<int64_t>(i));
    if (std::isnan(g) && std::isnan(w)) continue;
    if (!std::isfinite(g) || !std::isfinite(w)) {
      if (g != w) {
        m.max_error = INFINITY;
        Fail(m, fmt::format("{}[{}]: got {}, want {}", where, i, g, w));
      }
      continue;
    }
    const double err = std::fabs(g - w);
    m.max_error = std::max(m.max_error, err);
    if (!(err <= tol.abs + tol.rel * cond[i])) {
      Fail(m, fmt::format("{}[{}]: got {}, want {} (bound {})", where, i, g, w, tol.abs + tol.rel * cond[i]));
    }
  }
}

void CheckGuard(const std::vector<uint8_t>& out, size_t used, const std::string& where, Measure& m) {
  for (size_t i = used; i < out.size(); ++i) {
    if (out[i] != kGuard) return Fail(m, fmt::format("{}: wrote past the end of the output (byte {})", where, i));
  }
}

void CompareBytes(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want, const std::string& where,
                  Measure& m) {
  if (got == want) return;
  m.max_error = INFINITY;
  if (got.size() != want.size()) {
    return Fail(m, fmt::format("{}: {} output bytes, want {}", where, got.size(), want.size()));
  }
  size_t i = 0;
  while (got[i] == want[i]) ++i;
  Fail(m, fmt::format("{}: byte {} differs (got {:#04x}, want {:#04x})", where, i, got[i], want[i]));
}

namespace {
template <class F>
size_t FirstMismatchAnyNaN(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want) {
  for (size_t i = 0; i + sizeof(F) <= got.size(); i += sizeof(F)) {
    if (std::memcmp(got.data() + i, want.data() + i, sizeof(F)) == 0) continue;
    F g, w;
    std::memcpy(&g, got.data() + i, sizeof(F));
    std::memcpy(&w, want.data() + i, sizeof(F));
    if (std::isnan(g) && std::isnan(w)) continue;
    return i;
  }
  for (size_t i = got.size() - got.size() % sizeof(F); i < got.size(); ++i) {
    if (got[i] != want[i]) return i;
  }
  return got.size();
}
}  // namespace

void CompareBytesAnyNaN(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want, DType dtype,
                        const std::string& where, Measure& m) {
  if (got == want) return;
  if (got.size() != want.size() || (dtype != DType::Float32 && dtype != DType::Float64)) {
    return CompareBytes(got, want, where, m);
  }
  const size_t i = dtype == DType::Float32 ? FirstMismatchAnyNaN<float>(got, want)
                                           : FirstMismatchAnyNaN<double>(got, want);
  if (i == got.size()) return;
  m.max_error = INFINITY;
  Fail(m, fmt::format("{}: bytes from {} differ (got {:#04x}, want {:#04x})", where, i, got[i], want[i]));
}

Tolerance ScalarTolerance(DType dtype) {
  return dtype == DType::Float64 || dtype == DType::Int8 ? DefaultTolerance(dtype) : DefaultTolerance(DType::Float32);
}

}  // namespace backplane::conformance
