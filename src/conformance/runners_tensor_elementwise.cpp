// Runners for the TensorOps elementwise families (Compare, Logical, Where, Cast, Pow, Mod, Round,
// Trig, BitShift): every dtype of the cell, sizes around vector widths and 64-element bool words,
// NaN/Inf/-0 and integer extremes, identical errors. All but Pow and Trig compare output bytes
// exactly (guards included); Trig within the bounds stated in src/cpu/kernels/tensor_ops_math.cpp.
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "backplane/backend/backend.hpp"
#include "backplane/convert.hpp"
#include "backplane/random.hpp"
#include "conformance/runner.hpp"

namespace backplane::conformance {
namespace {

using CompareFn = BP_RET_Compare (*)(BP_PARAMS_Compare);
using LogicalFn = BP_RET_Logical (*)(BP_PARAMS_Logical);
using WhereFn = BP_RET_Where (*)(BP_PARAMS_Where);
using CastFn = BP_RET_Cast (*)(BP_PARAMS_Cast);
using PowFn = BP_RET_Pow (*)(BP_PARAMS_Pow);
using ModFn = BP_RET_Mod (*)(BP_PARAMS_Mod);
using RoundFn = BP_RET_Round (*)(BP_PARAMS_Round);
using TrigFn = BP_RET_Trig (*)(BP_PARAMS_Trig);
using BitShiftFn = BP_RET_BitShift (*)(BP_PARAMS_BitShift);

// The cell's sizes plus the bool-word boundaries.
std::vector<int64_t> Sizes(const RunContext& c) {
  std::vector<int64_t> sizes = c.sizes;
  for (int64_t n : {63, 64, 65, 127, 128, 129, 200, 515}) sizes.push_back(n);
  return sizes;
}

template <class T>
void PutAt(std::vector<uint8_t>& s, int64_t i, T v) {
  std::memcpy(s.data() + static_cast<size_t>(i) * sizeof(T), &v, sizeof(T));
}

// An integer of type T from random bits: a small value (so that equal pairs and small divisors
// occur), an extreme, or any bit pattern.
template <class T>
T RandomInt(uint64_t seed, int64_t i) {
  const auto r = PhiloxBits(seed, 21, static_cast<uint64_t>(i));
  const uint64_t bits = (uint64_t{r[1]} << 32) | r[2];
  switch (r[0] % 8) {
    case 0:
      return std::numeric_limits<T>::min();
    case 1:
      return std::numeric_limits<T>::max();
    case 2:
    case 3:
    case 4:
      return static_cast<T>(static_cast<int64_t>(r[3] % 11) - 5);
    default:
      return static_cast<T>(bits);
  }
}

// Seeded storage of `dtype` (+8 bytes of slack): floats N(0, scale) with specials (+-0, +-Inf,
// NaN, halves, values beyond every integer range), integers as RandomInt, bools random bits.
std::vector<uint8_t> Values(DType dtype, int64_t n, uint64_t seed, double scale = 3.0) {
  if (IsFloatingPoint(dtype)) {
    std::vector<uint8_t> s = RandomStorage(dtype, n, seed, scale, true);
    static constexpr double kEdges[] = {
        0.5,  -0.5,  2.5,  -2.5, 127.5,  -128.5,  255.9,    65504.0,      3e9,           -3e9, 1e19, -1e19,
        1e30, -1e30, -0.0, NAN,  4.5e15, 32767.5, -32768.9, 2147483520.0, -2147483648.0, 1.5,  1e-3, 7.0};
    for (int64_t i = 5; i < n; i += 7) {
      StoreAsDouble(s, dtype, i, kEdges[static_cast<size_t>(i / 7) % std::size(kEdges)]);
    }
    return s;
  }
  std::vector<uint8_t> s(DTypeStorageBytes(dtype, n) + 8, 0);
  for (int64_t i = 0; i < n; ++i) {
    switch (dtype) {
      case DType::Int64:
        PutAt(s, i, RandomInt<int64_t>(seed, i));
        break;
      case DType::Int32:
        PutAt(s, i, RandomInt<int32_t>(seed, i));
        break;
      case DType::Int16:
        PutAt(s, i, RandomInt<int16_t>(seed, i));
        break;
      case DType::Int8:
        PutAt(s, i, RandomInt<int8_t>(seed, i));
        break;
      case DType::Uint64:
        PutAt(s, i, RandomInt<uint64_t>(seed, i));
        break;
      case DType::Uint32:
        PutAt(s, i, RandomInt<uint32_t>(seed, i));
        break;
      case DType::Uint16:
        PutAt(s, i, RandomInt<uint16_t>(seed, i));
        break;
      case DType::Uint8:
        PutAt(s, i, RandomInt<uint8_t>(seed, i));
        break;
      case DType::Bool:
        StoreBool(s.data(), i, PhiloxBits(seed, 22, static_cast<uint64_t>(i))[0] & 1);
        break;
      default:
        break;
    }
  }
  return s;
}

// b: a copy of a with about half of its elements replaced (so that equal pairs occur, NaN too).
std::vector<uint8_t> Partner(const std::vector<uint8_t>& a, DType dtype, int64_t n, uint64_t seed) {
  std::vector<uint8_t> b = a;
  const std::vector<uint8_t> other = Values(dtype, n, seed);
  for (int64_t i = 0; i < n; ++i) {
    if (PhiloxBits(seed, 23, static_cast<uint64_t>(i))[0] & 1) continue;
    if (dtype == DType::Bool) {
      StoreBool(b.data(), i, LoadBool(other.data(), i));
    } else {
      const size_t e = DTypeStorageBytes(dtype, 1);
      std::memcpy(b.data() + static_cast<size_t>(i) * e, other.data() + static_cast<size_t>(i) * e, e);
    }
  }
  return b;
}

// An output buffer of `n` elements of `dtype`, shifted by `off` bytes, filled with the guard.
std::vector<uint8_t> Out(DType dtype, int64_t n, size_t off) {
  return std::vector<uint8_t>(DTypeStorageBytes(dtype, n) + 16 + off, kGuard);
}

void ExpectSameBytes(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want,
                     const std::string& where, Measure& m) {
  if (got == want) return;
  size_t i = 0;
  while (i < got.size() && got[i] == want[i]) ++i;
  Fail(m, fmt::format("{}: byte {} differs: got 0x{:02x}, want 0x{:02x}", where, i, got[i], want[i]));
}

// The dtype no TensorOps method accepts, for the error checks.
constexpr DType kBadDType = DType::Int4;

Measure RunCompare(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  QuickThreads threads(c);
  const DType d = c.dtype;
  for (int64_t n : Sizes(c)) {
    const size_t off = Offset(d, n);
    const auto a = Shifted(Values(d, n, c.seed + static_cast<uint64_t>(n)), off);
    const auto b = Shifted(Partner(Unshifted(a, off), d, n, c.seed + 977 + static_cast<uint64_t>(n)), off);
    for (int op = 0; op < 6; ++op) {
      const CompareConfig config{static_cast<CompareOp>(op)};
      const size_t out_off = static_cast<size_t>(n % 2);
      auto want = Out(DType::Bool, n, out_off), got = want;
      Unerase<CompareFn>(ref)(config, a.data() + off, b.data() + off, want.data() + out_off, n, d);
      Unerase<CompareFn>(fast)(config, a.data() + off, b.data() + off, got.data() + out_off, n, d);
      ExpectSameBytes(got, want, fmt::format("n={} op={} out", n, op), m);
    }
  }
  const auto a = Values(d, 9, c.seed);
  auto out = Out(DType::Bool, 9, 0);
  auto call = [&](const CompareConfig& cfg, const void* x, const void* y, void* o, int64_t n, DType dt) {
    return [&, cfg, x, y, o, n, dt](bool use_ref) {
      Unerase<CompareFn>(use_ref ? ref : fast)(cfg, x, y, o, n, dt);
    };
  };
  ExpectSameError("count<0", out, call({}, a.data(), a.data(), out.data(), -1, d), m);
  ExpectSameError("null b", out, call({}, a.data(), nullptr, out.data(), 9, d), m);
  ExpectSameError("null out", out, call({}, a.data(), a.data(), nullptr, 9, d), m);
  ExpectSameError("bad dtype", out, call({}, a.data(), a.data(), out.data(), 9, kBadDType), m);
  ExpectSameError("bad op", out,
                  call(CompareConfig{static_cast<CompareOp>(9)}, a.data(), a.data(), out.data(), 9, d), m);
  return m;
}

Measure RunLogical(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  QuickThreads threads(c);
  for (int64_t n : Sizes(c)) {
    const size_t off = n % 2;
    const auto a = Shifted(Values(DType::Bool, n, c.seed + static_cast<uint64_t>(n)), off);
    const auto b = Shifted(Values(DType::Bool, n, c.seed + 31 + static_cast<uint64_t>(n)), off);
    for (int op = 0; op < 4; ++op) {
      const LogicalConfig config{static_cast<LogicalOp>(op)};
      const void* pb = op == 3 ? nullptr : b.data() + off;
      auto want = Out(DType::Bool, n, off), got = want;
      Unerase<LogicalFn>(ref)(config, a.data() + off, pb, want.data() + off, n, DType::Bool);
      Unerase<LogicalFn>(fast)(config, a.data() + off, pb, got.data() + off, n, DType::Bool);
      ExpectSameBytes(got, want, fmt::format("n={} op={} out", n, op), m);
    }
  }
  const auto a = Values(DType::Bool, 9, c.seed);
  auto out = Out(DType::Bool, 9, 0);
  auto call = [&](LogicalOp op, const void* b, int64_t n, DType dt) {
    return [&, op, b, n, dt](bool use_ref) {
      Unerase<LogicalFn>(use_ref ? ref : fast)(LogicalConfig{op}, a.data(), b, out.data(), n, dt);
    };
  };
  ExpectSameError("null b (And)", out, call(LogicalOp::And, nullptr, 9, DType::Bool), m);
  ExpectSameError("count<0", out, call(LogicalOp::Not, nullptr, -2, DType::Bool), m);
  ExpectSameError("dtype f32", out, call(LogicalOp::Or, a.data(), 9, DType::Float32), m);
  ExpectSameError("bad op", out, call(static_cast<LogicalOp>(7), a.data(), 9, DType::Bool), m);
  return m;
}

Measure RunWhere(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  QuickThreads threads(c);
  const DType d = c.dtype;
  for (int64_t n : Sizes(c)) {
    const size_t off = Offset(d, n);
    const auto cond = Shifted(Values(DType::Bool, n, c.seed + 5 + static_cast<uint64_t>(n)), 1);
    const auto a = Shifted(Values(d, n, c.seed + static_cast<uint64_t>(n)), off);
    const auto b = Shifted(Values(d, n, c.seed + 11 + static_cast<uint64_t>(n)), off);
    auto want = Out(d, n, off), got = want;
    Unerase<WhereFn>(ref)(cond.data() + 1, a.data() + off, b.data() + off, want.data() + off, n, d);
    Unerase<WhereFn>(fast)(cond.data() + 1, a.data() + off, b.data() + off, got.data() + off, n, d);
    ExpectSameBytes(got, want, fmt::format("n={} out", n), m);
  }
  const auto a = Values(d, 9, c.seed);
  const auto cond = Values(DType::Bool, 9, c.seed);
  auto out = Out(d, 9, 0);
  auto call = [&](const void* cd, int64_t n, DType dt) {
    return [&, cd, n, dt](bool use_ref) {
      Unerase<WhereFn>(use_ref ? ref : fast)(cd, a.data(), a.data(), out.data(), n, dt);
    };
  };
  ExpectSameError("null cond", out, call(nullptr, 9, d), m);
  ExpectSameError("count<0", out, call(cond.data(), -1, d), m);
  ExpectSameError("bad dtype", out, call(cond.data(), 9, kBadDType), m);
  return m;
}

// Every target dtype from the cell's dtype.
Measure RunCast(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  QuickThreads threads(c);
  const DType from = c.dtype;
  for (DType to : AllDTypes()) {
    if (!kTensorDTypesAndBool.Contains(to)) continue;
    for (int64_t n : Sizes(c)) {
      const size_t off = Offset(from, n);
      const size_t out_off = Offset(to, n);
      const auto in = Shifted(Values(from, n, c.seed + static_cast<uint64_t>(n), 1e4), off);
      auto want = Out(to, n, out_off), got = want;
      Unerase<CastFn>(ref)(in.data() + off, from, want.data() + out_off, to, n);
      Unerase<CastFn>(fast)(in.data() + off, from, got.data() + out_off, to, n);
      ExpectSameBytes(got, want, fmt::format("to {} n={} out", DTypeName(to), n), m);
    }
  }
  const auto in = Values(from, 9, c.seed);
  auto out = Out(DType::Float64, 9, 0);
  auto call = [&](const void* p, DType f, DType t, int64_t n) {
    return [&, p, f, t, n](bool use_ref) { Unerase<CastFn>(use_ref ? ref : fast)(p, f, out.data(), t, n); };
  };
  ExpectSameError("null in", out, call(nullptr, from, DType::Float32, 9), m);
  ExpectSameError("count<0", out, call(in.data(), from, DType::Float32, -3), m);
  ExpectSameError("bad from", out, call(in.data(), kBadDType, DType::Float32, 9), m);
  ExpectSameError("bad to", out, call(in.data(), from, DType::Complex64, 9), m);
  return m;
}

Measure RunPow(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  QuickThreads threads(c);
  const DType d = c.dtype;
  for (int64_t n : Sizes(c)) {
    const size_t off = Offset(d, n);
    const auto a = Shifted(Values(d, n, c.seed + static_cast<uint64_t>(n), 2.0), off);
    const auto b = Shifted(Values(d, n, c.seed + 13 + static_cast<uint64_t>(n), 2.0), off);
    auto want = Out(d, n, off), got = want;
    Unerase<PowFn>(ref)(a.data() + off, b.data() + off, want.data() + off, n, d);
    Unerase<PowFn>(fast)(a.data() + off, b.data() + off, got.data() + off, n, d);
    CompareStorage(Unshifted(got, off), Unshifted(want, off), d, n, DefaultTolerance(d),
                   fmt::format("n={} out", n), m);
  }
  const auto a = Values(d, 9, c.seed);
  auto out = Out(d, 9, 0);
  ExpectSameError(
      "null b", out, [&](bool r) { Unerase<PowFn>(r ? ref : fast)(a.data(), nullptr, out.data(), 9, d); }, m);
  ExpectSameError(
      "dtype i32", out,
      [&](bool r) { Unerase<PowFn>(r ? ref : fast)(a.data(), a.data(), out.data(), 9, DType::Int32); }, m);
  return m;
}

Measure RunMod(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  QuickThreads threads(c);
  const DType d = c.dtype;
  for (int64_t n : Sizes(c)) {
    const size_t off = Offset(d, n);
    const auto a = Shifted(Values(d, n, c.seed + static_cast<uint64_t>(n)), off);
    auto b0 = Values(d, n, c.seed + 17 + static_cast<uint64_t>(n));
    if (!IsFloatingPoint(d)) {  // integer divisors must be non-zero
      const size_t e = DTypeStorageBytes(d, 1);
      for (int64_t i = 0; i < n; ++i) {
        uint8_t* p = b0.data() + static_cast<size_t>(i) * e;
        bool zero = true;
        for (size_t k = 0; k < e; ++k) zero = zero && p[k] == 0;
        if (zero) p[0] = 3;
      }
    }
    const auto b = Shifted(b0, off);
    for (bool fmod : {false, true}) {
      auto want = Out(d, n, off), got = want;
      Unerase<ModFn>(ref)(ModConfig{fmod}, a.data() + off, b.data() + off, want.data() + off, n, d);
      Unerase<ModFn>(fast)(ModConfig{fmod}, a.data() + off, b.data() + off, got.data() + off, n, d);
      ExpectSameBytes(got, want, fmt::format("n={} fmod={} out", n, fmod), m);
    }
  }
  const auto a = Values(d, 9, c.seed);
  auto out = Out(d, 9, 0);
  auto zeros = std::vector<uint8_t>(DTypeStorageBytes(d, 9) + 8, 0);
  if (!IsFloatingPoint(d)) {
    ExpectSameError(
        "b zero", out,
        [&](bool r) { Unerase<ModFn>(r ? ref : fast)({}, a.data(), zeros.data(), out.data(), 9, d); }, m);
  }
  ExpectSameError(
      "null a", out, [&](bool r) { Unerase<ModFn>(r ? ref : fast)({}, nullptr, a.data(), out.data(), 9, d); },
      m);
  ExpectSameError(
      "dtype bool", out,
      [&](bool r) { Unerase<ModFn>(r ? ref : fast)({}, a.data(), a.data(), out.data(), 9, DType::Bool); }, m);
  return m;
}

Measure RunRound(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  QuickThreads threads(c);
  const DType d = c.dtype;
  for (int64_t n : Sizes(c)) {
    const size_t off = Offset(d, n);
    const auto x = Shifted(Values(d, n, c.seed + static_cast<uint64_t>(n), 4.0), off);
    for (int op = 0; op < 5; ++op) {
      const RoundConfig config{static_cast<RoundOp>(op)};
      auto want = Out(d, n, off), got = want;
      Unerase<RoundFn>(ref)(config, x.data() + off, want.data() + off, n, d);
      Unerase<RoundFn>(fast)(config, x.data() + off, got.data() + off, n, d);
      ExpectSameBytes(got, want, fmt::format("n={} op={} out", n, op), m);
    }
  }
  const auto x = Values(d, 9, c.seed);
  auto out = Out(d, 9, 0);
  auto call = [&](RoundOp op, const void* p, int64_t n, DType dt) {
    return [&, op, p, n, dt](bool r) {
      Unerase<RoundFn>(r ? ref : fast)(RoundConfig{op}, p, out.data(), n, dt);
    };
  };
  ExpectSameError("null in", out, call(RoundOp::Floor, nullptr, 9, d), m);
  ExpectSameError("count<0", out, call(RoundOp::Ceil, x.data(), -1, d), m);
  ExpectSameError("dtype i32", out, call(RoundOp::Trunc, x.data(), 9, DType::Int32), m);
  ExpectSameError("bad op", out, call(static_cast<RoundOp>(11), x.data(), 9, d), m);
  return m;
}

// Relative bounds of the Trig kernels against the reference (a few ULP each; see the kernel file).
Tolerance TrigTolerance(DType d) {
  switch (d) {
    case DType::Float64:
      return {1e-300, 1e-14};
    case DType::Float32:
      return {1e-37, 1.3e-6};
    case DType::Float16:
      return {6e-8, 1e-3};
    default:
      return {1e-37, 8e-3};
  }
}

// Inputs for TrigOp `op`: mostly inside the vector range (|x| <= 0.9 for asin/acos/atanh,
// 1 + |x| for acosh, N(0, 3) otherwise), with the specials and out-of-domain values of Values.
std::vector<uint8_t> TrigInputs(DType d, int64_t n, uint64_t seed, int op, bool specials) {
  std::vector<uint8_t> s = specials ? Values(d, n, seed) : RandomStorage(d, n, seed, 3.0, false);
  if (specials) return s;
  const auto t = static_cast<TrigOp>(op);
  for (int64_t i = 0; i < n; ++i) {
    const double v = LoadAsDouble(s, d, i);
    if (t == TrigOp::Asin || t == TrigOp::Acos || t == TrigOp::Atanh) {
      StoreAsDouble(s, d, i, std::fmod(v, 0.9));
    } else if (t == TrigOp::Acosh) {
      StoreAsDouble(s, d, i, 1.0 + std::fabs(v));
    }
  }
  return s;
}

Measure RunTrig(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  QuickThreads threads(c);
  const DType d = c.dtype;
  const Tolerance tol = TrigTolerance(d);
  for (int64_t n : Sizes(c)) {
    const size_t off = Offset(d, n);
    for (int op = 0; op <= static_cast<int>(TrigOp::Atanh); ++op) {
      for (bool specials : {false, true}) {
        const auto x = Shifted(TrigInputs(d, n, c.seed + static_cast<uint64_t>(n * 16 + op), op, specials), off);
        const TrigConfig config{static_cast<TrigOp>(op)};
        auto want = Out(d, n, off), got = want;
        Unerase<TrigFn>(ref)(config, x.data() + off, want.data() + off, n, d);
        Unerase<TrigFn>(fast)(config, x.data() + off, got.data() + off, n, d);
        const std::string where = fmt::format("n={} op={}{} out", n, op, specials ? " (specials)" : "");
        CompareStorage(Unshifted(got, off), Unshifted(want, off), d, n, tol, where, m);
        CheckGuard(got, off + DTypeStorageBytes(d, n), where, m);
      }
    }
  }
  const auto x = Values(d, 9, c.seed);
  auto out = Out(d, 9, 0);
  auto call = [&](TrigOp op, const void* p, int64_t n, DType dt) {
    return [&, op, p, n, dt](bool r) { Unerase<TrigFn>(r ? ref : fast)(TrigConfig{op}, p, out.data(), n, dt); };
  };
  ExpectSameError("null in", out, call(TrigOp::Tan, nullptr, 9, d), m);
  ExpectSameError("count<0", out, call(TrigOp::Asin, x.data(), -1, d), m);
  ExpectSameError("dtype i32", out, call(TrigOp::Atan, x.data(), 9, DType::Int32), m);
  ExpectSameError("bad op", out, call(static_cast<TrigOp>(12), x.data(), 9, d), m);
  return m;
}

Measure RunBitShift(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  const DType d = c.dtype;
  const int64_t bits = static_cast<int64_t>(DTypeStorageBytes(d, 1)) * 8;
  for (int64_t n : Sizes(c)) {
    const size_t off = Offset(d, n);
    const auto a = Shifted(Values(d, n, c.seed + static_cast<uint64_t>(n)), off);
    // Shift amounts 0 .. bits + 2 (past the width included).
    auto b0 = Values(d, n, c.seed + 29 + static_cast<uint64_t>(n));
    const size_t e = DTypeStorageBytes(d, 1);
    for (int64_t i = 0; i < n; ++i) {
      uint8_t* p = b0.data() + static_cast<size_t>(i) * e;
      std::memset(p, 0, e);
      p[0] = static_cast<uint8_t>((p[0] + i * 7) % (bits + 3));
    }
    const auto b = Shifted(b0, off);
    for (bool left : {true, false}) {
      auto want = Out(d, n, off), got = want;
      Unerase<BitShiftFn>(ref)(BitShiftConfig{left}, a.data() + off, b.data() + off, want.data() + off, n, d);
      Unerase<BitShiftFn>(fast)(BitShiftConfig{left}, a.data() + off, b.data() + off, got.data() + off, n, d);
      ExpectSameBytes(got, want, fmt::format("n={} left={} out", n, left), m);
    }
  }
  const auto a = Values(d, 9, c.seed);
  auto out = Out(d, 9, 0);
  ExpectSameError(
      "null a", out,
      [&](bool r) { Unerase<BitShiftFn>(r ? ref : fast)({}, nullptr, a.data(), out.data(), 9, d); }, m);
  ExpectSameError(
      "dtype f32", out,
      [&](bool r) { Unerase<BitShiftFn>(r ? ref : fast)({}, a.data(), a.data(), out.data(), 9, DType::Float32); },
      m);
  return m;
}

}  // namespace

void RegisterTensorElementwiseRunners(RunnerRegistry& r) {
  r["Compare"] = RunCompare;
  r["Logical"] = RunLogical;
  r["Where"] = RunWhere;
  r["Cast"] = RunCast;
  r["Pow"] = RunPow;
  r["Mod"] = RunMod;
  r["Round"] = RunRound;
  r["Trig"] = RunTrig;
  r["BitShift"] = RunBitShift;
}

}  // namespace backplane::conformance
