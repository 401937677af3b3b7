// Highway kernels for the Activation surface (docs/semantics/activation.md): the 25 unary
// functions, the 12 parametric ones (PReLUV included), the 16 gated linear units, Softmax and
// LogSoftmax. f32 and f64 run in native lanes; f16/bf16 are widened to f32 in blocks and rounded
// back to nearest even, as the reference does.
//
// Vector math: hwy/contrib/math (Log, Log1p, Sin; Exp and Expm1 for f64) wrapped so that the IEEE
// special values match libm (overflow to +Inf, exp(-Inf) = 0, log(0) = -Inf, NaN in -> NaN out,
// expm1(-0) = -0); our own f32 exp/expm1 core (no float -> int conversion, short dependency
// chains) with a fast path (TryExpF32: every lane's result normal, no clamps, degree-6 Horner)
// shared by Exp, the sigmoid family (num / (1 + exp(-v)): Sigmoid, Silu, GeluTanh, QuickGelu, the
// GLUs) and the chunked Softmax; a cheaper exp as 2^k 2^f with a degree-5 2^f (ExpSoftmax: for
// the one-call-per-row Softmax and for Gelu); f32 tanh as a clamped rational (Eigen's 13/6); f32
// Gelu for |x| < 13 as x Q(|x|) with Q = exp(-x^2/2) P4/D4 (max rel. error 1.2e-7); a polynomial
// for log1p on [0, 1]; and our own erfc for everything else (Highway 1.0.3 has none):
//   erfc(a) = t * H(s) * exp(-a^2),  t = 1 / (1 + a/2),  s = A t + B in [-1, 1],  a = |z|,
//   erfc(z) = 2 - erfc(|z|) for z < 0,
// where H(s) = erfc(a) exp(a^2) / t (the scaled erfc) is the Chebyshev interpolant of degree 10
// (f32, a <= 10.25) or 22 (f64, a <= 27.5; beyond those erfc underflows to 0), converted to
// monomials in s (sum of |coefficients| 1.01 and 1.02: well conditioned). Interpolation error
// relative to H: 5.1e-9 (f32), 8.7e-16 (f64), from mpmath at 50 digits. Measured max relative
// error of erfc against glibc's long double erfcl: see the report of issue 7.
//
// Kernels hand every unusual argument (bad dtype, negative sizes, null pointers, invalid
// parameters) to the reference, which throws the documented error; nothing is written before.
// Large inputs (>= 64K elements) are split into fixed 32K-element chunks run on the thread pool;
// f32/f64 outputs of >= 16 MiB that do not alias an input are written with non-temporal stores
// (input prefetched 4 KiB ahead). f32 Softmax/LogSoftmax of fewer than 64K elements (one call per
// row) read x from memory once (SoftmaxRowF32: a running shift instead of a separate max pass, then
// one tight store pass); longer ones run max, sum and finish passes over the chunks (the f32 max
// pass is a plain Max; a NaN it misses makes the f64 sum NaN, which gives the all-NaN result).
// MathExt.SoftmaxRows/LogSoftmaxRows run those row kernels over [rows, cols], threaded over rows.
// Measured accuracy and speed: the report of issue 7 (dense sweeps against the reference on every
// target; 16M-element f32 throughput against STREAM triad).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/activation.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <hwy/contrib/math/math-inl.h>

#include "cpu/kernels/convert-inl.h"

#ifndef BACKPLANE_CPU_KERNELS_ACTIVATION_OPS_
#define BACKPLANE_CPU_KERNELS_ACTIVATION_OPS_
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#if HWY_ARCH_X86
#include <immintrin.h>  // _mm_sfence after non-temporal stores
#endif
namespace backplane::cpu::simd::activation_ops {

enum UnaryOp : int {
  kExp, kLog, kLog1p, kExpm1, kSigmoid, kLogSigmoid, kTanh, kSilu, kGeluTanh, kGelu, kReLU,
  kLeakyReLU, kELU, kSELU, kSoftplus, kMish, kSoftsign, kHardSigmoid, kHardSwish, kHardTanh,
  kQuickGelu, kTanhShrink
};
enum ParamOp : int { kLeaky, kEluAlpha, kCeluAlpha, kThreshold, kSnake, kHardShrink, kSoftShrink, kClamp };
enum GluOp : int { kGlu, kGeGlu, kGeGluTanh, kSwiGlu, kReGlu, kSiGlu, kLinGlu };

// Elements per f16/bf16 block and per Softmax summation block.
constexpr size_t kBlock = 1024;
// Highway's Sin is accurate on [-39000, 39000]; larger arguments take std::sin.
constexpr double kSinLimit = 39000.0;

// log1p(w) = w * P(w) on [0, 1] (f32), Chebyshev interpolant, |error of P| <= 5.4e-9.
constexpr float kLog1pF32[10] = {0.999999994656f, -0.499998926481f, 0.333297104989f,  -0.249516162629f,
                                 0.196632742572f, -0.152696670744f, 0.105436237954f,  -0.0563736128301f,
                                 0.019542527261f, -0.00317605701843f};
// e^r - 1 = r + r^2 Q(r) on |r| <= ln2/2 (f32; Highway's ExpPoly coefficients).
constexpr float kExpm1F32[6] = {0.5f, 0.166666671633720397949219f, 0.0416664853692054748535156f,
                                0.00833336077630519866943359f, 0.00139304355252534151077271f,
                                0.000198527617612853646278381f};

// e^r = 1 + r P(r) on |r| <= 0.3467 (f32 fast exp), Chebyshev interpolant of (e^r - 1)/r, |error of
// P| <= 1.2e-8; the leading 1 is exact, so exp(0) = 1.
constexpr float kExpF32[6] = {1.0000000107951843749f, 0.50000000134872252595f, 0.16666505024508913013f,
                              0.041666464711379082993f, 0.008369174671254345942f, 0.001393367373293185169f};
// f32 Softmax/LogSoftmax of one buffer of fewer than kSoftmaxRowMax elements (SoftmaxRowF32), in
// blocks of kSoftmaxBlockVectors vectors: 4 accumulator chains, so each f32 lane adds at most 18
// positive terms (16, plus leftovers in the last block) before the block's sum goes into f64: a
// relative error below 20 2^-24 = 1.2e-6 with the reduction of the chains.
constexpr size_t kSoftmaxRowMax = 65536;
constexpr size_t kSoftmaxBlockVectors = 64;
constexpr size_t kSoftmaxBufMax = 4096;  // Softmax rows up to this keep their exponentials (16 KiB)
constexpr size_t kSoftmaxPrefetchBytes = 4096;  // x read ahead in pass 1 (3-10% faster from memory)
// exp(d) for d <= 0 as 2^k 2^f, k = round(d log2e), f = d log2e - k in [-1/2, 1/2]; below
// kSoftmaxExpMin (k >= -125 above it, so 2^k 2^f is normal) the result is 0 (an absolute error
// below 2.7e-38). 2^f = 1 + f P(f), P of degree 4 fitted for relative error (weighted least squares,
// Lawson iterations, long double): max relative error 1.09e-7 with these f32 coefficients.
constexpr float kSoftmaxExpMin = -86.5f;
constexpr float kSoftmaxShiftSlack = 8.0f;
constexpr float kExp2F32[5] = {6.931470037e-01f, 2.402224243e-01f, 5.550733581e-02f, 9.671512991e-03f,
                               1.326472382e-03f};
// tanh(x) = x P(x^2) / Q(x^2) on |x| <= 7.90531110763549805 (f32; beyond, tanh rounds to +-1):
// Eigen's generic_fast_tanh_float rational (degree 13/6), both polynomials divided by its leading
// numerator coefficient so that P(0) = 1 (no underflow of x P for tiny x; tanh(x) = x there).
constexpr float kTanhClampF32 = 7.90531110763549805f;
constexpr float kTanhNumF32[7] = {1.0f,
                                  0.13022555035799356f,
                                  0.0030360987040971107f,
                                  1.0467500527889187e-5f,
                                  -1.7583791434041893e-8f,
                                  4.0874177308044119e-11f,
                                  -5.6416769634728439e-14f};
constexpr float kTanhDenF32[4] = {1.0000001280520783f, 0.4635584444559598f, 0.024222767099561962f,
                                  0.00024486612465923731f};

// Gelu (f32, |x| < 13): Q(a) = erfc(a / sqrt2) / 2 = exp(-a^2 / 2) P(a) / D(a), a = |x|, P and D of
// degree 4, fitted for relative error on [0, 13] (weighted least squares with Lawson iterations,
// mpmath at 40 digits): max relative error of P/D 1.24e-7 on a 4001-point check grid.
constexpr float kGeluFastMaxF32 = 13.0f;
constexpr float kGeluNumF32[5] = {0.49999993905349603f, 0.33920034409415973f, 0.10725835111536885f,
                                  0.014286125515651528f, 2.4906032167992755e-7f};
constexpr float kGeluDenF32[5] = {1.0f, 1.4762785912009741f, 0.89247484007283839f, 0.26828460076225114f,
                                  0.035839012077266581f};

// erfc fits (see the file comment): s = kErfcA * t + kErfcB, H(s) = sum c[k] s^k.
constexpr float kErfcMaxF32 = 10.25f;
constexpr float kErfcAF32 = 2.390243902f;
constexpr float kErfcBF32 = -1.390243902f;
constexpr float kErfcF32[11] = {0.5706821547f,    0.3267180219f,     0.1027901501f,    0.006137799567f,
                                -0.006242230147f, -0.0006475404346f, 0.0006106938516f, 7.365769864e-6f,
                                -6.838481156e-5f, 6.557592678e-6f,   5.414039029e-6f};
constexpr double kErfcMaxF64 = 27.5;
constexpr double kErfcAF64 = 2.145454545454545454545;
constexpr double kErfcBF64 = -1.145454545454545454545;
constexpr double kErfcF64[23] = {
    0.5347326614946254717,     0.3381708758159455086,     0.1243854873491829287,     0.01228532466561838743,
    -0.008867830708573824856,  -0.001813698023827597716,  0.001116383618757863834,   0.0001459386253005380358,
    -0.0001870840782473246042, 0.00001427244325858096647, 0.00002820260181209805605, -0.00001068265130178507548,
    -1.806126986638168114e-6,  2.741351364856861657e-6,   -7.099629648965029237e-7,  -2.838822528634045642e-7,
    2.867806189002856534e-7,   -6.409835059440341308e-8,  -4.058347366271126064e-8,  3.037834372161357231e-8,
    -2.038637551735070976e-9,  -4.085633027635142442e-9,  1.115420891463383169e-9};

}  // namespace backplane::cpu::simd::activation_ops
#endif

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::activation_hwy::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace activation_ops;  // NOLINT
using ::backplane::cpu::simd::HWY_NAMESPACE::NarrowBlock;
using ::backplane::cpu::simd::HWY_NAMESPACE::WidenBlock;

// ---- Vector math with libm's special values ----------------------------------------------------
// NaN-safe clamps use comparisons (hn::Min/Max treat NaN differently per target).

template <class D, class V>
HWY_INLINE V ClampNaN(D d, V x, V lo, V hi) {  // NaN passes through
  return hn::IfThenElse(hn::Lt(x, lo), lo, hn::IfThenElse(hn::Gt(x, hi), hi, x));
}

// Polynomial sum c[k] s^k, Estrin's scheme (groups of four, then Horner in s^4): short dependency
// chains, which is what limits these kernels.
template <class D, class V, size_t K>
HWY_INLINE V Poly(D d, V s, const hn::TFromD<D> (&c)[K]) {
  const V s2 = hn::Mul(s, s);
  const V s4 = hn::Mul(s2, s2);
  constexpr size_t kGroups = (K + 3) / 4;
  V p = hn::Zero(d);
  for (size_t g = kGroups; g-- > 0;) {
    const size_t k = 4 * g;
    V lo = k + 1 < K ? hn::MulAdd(hn::Set(d, c[k + 1]), s, hn::Set(d, c[k])) : hn::Set(d, c[k]);
    if (k + 2 < K) {
      const V hi = k + 3 < K ? hn::MulAdd(hn::Set(d, c[k + 3]), s, hn::Set(d, c[k + 2])) : hn::Set(d, c[k + 2]);
      lo = hn::MulAdd(hi, s2, lo);
    }
    p = g + 1 == kGroups ? lo : hn::MulAdd(p, s4, lo);
  }
  return p;
}

// Polynomial sum c[k] s^k by Horner's rule: fewest operations; the dependency chain is hidden by
// the independent vectors in flight (these loops are throughput bound).
template <class D, class V, size_t K>
HWY_INLINE V Horner(D d, V s, const hn::TFromD<D> (&c)[K]) {
  V p = hn::Set(d, c[K - 1]);
  for (size_t k = K - 1; k-- > 0;) p = hn::MulAdd(p, s, hn::Set(d, c[k]));
  return p;
}

// Fast f32 exp(x) (kNeg: exp(-x)) for a vector whose results are all normal numbers: k = round(x /
// ln2) in [-125, 125] for every lane (no NaN, no Inf, no overflow or underflow). Returns false
// otherwise, and the caller takes its general path. k by the 1.5 * 2^23 magic addition; the bits of
// kt shifted left by 23 are k << 23 (the exponent bits and the 2^22 bit shift out). r = x - k ln2 in
// two parts (Highway's Cody-Waite constants), e^r = 1 + r P(r), 2^k added to the exponent field.
// kCheck = false: the caller guarantees the range.
template <bool kNeg, bool kCheck = true, class D, class V>
HWY_INLINE bool TryExpF32(D d, V x, V* e) {
  const hn::RebindToSigned<D> di;
  const V magic = hn::Set(d, 12582912.0f);
  const V kt = hn::MulAdd(x, hn::Set(d, kNeg ? -1.44269504088896341f : 1.44269504088896341f), magic);
  const V kf = hn::Sub(kt, magic);
  if (kCheck && HWY_UNLIKELY(!hn::AllTrue(d, hn::Le(hn::Abs(kf), hn::Set(d, 125.0f))))) return false;
  const V ln2hi = hn::Set(d, 0.693145751953125f);
  V r;
  if constexpr (kNeg) {
    r = hn::NegMulSub(kf, ln2hi, x);  // -x - k ln2hi
  } else {
    r = hn::NegMulAdd(kf, ln2hi, x);
  }
  r = hn::NegMulAdd(kf, hn::Set(d, 1.428606765330187045e-6f), r);
  const V p = hn::MulAdd(Horner(d, r, kExpF32), r, hn::Set(d, 1.0f));
  *e = hn::BitCast(d, hn::Add(hn::BitCast(di, p), hn::ShiftLeft<23>(hn::BitCast(di, kt))));
  return true;
}

// Clamp to [-c, c] that keeps NaN. On x86 (not scalar) MAXPS/MINPS return their second operand when
// either is NaN, so Min(hi, Max(lo, x)) keeps a NaN x in two instructions; elsewhere comparisons.
template <class D, class V>
HWY_INLINE V ClampSymNaN(D d, V x, hn::TFromD<D> c) {
#if HWY_ARCH_X86 && HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128
  return hn::Min(hn::Set(d, c), hn::Max(hn::Set(d, -c), x));
#else
  return ClampNaN(d, x, hn::Set(d, -c), hn::Set(d, c));
#endif
}

// f32 exp / expm1 cores for x in [-105, 89] (not NaN): k = round(x / ln2) by the 1.5 * 2^23
// magic-number addition (exact integer in the low mantissa bits, no float -> int conversion),
// r = x - k ln2 in two parts (Cody-Waite, Highway's constants), e^r - 1 by a degree-7 polynomial,
// and 2^k applied in two halves so that results underflow gradually and overflow to +Inf.
template <class D, class V>
HWY_INLINE V ScaleByPow2(D d, V y, V kf, hn::Vec<hn::RebindToSigned<D>> k) {
  const hn::RebindToSigned<D> di;
  // Common case, |k| <= 125: y is in [0.70, 1.42], so y 2^k is normal; add k to the exponent field.
  if (HWY_LIKELY(hn::AllTrue(d, hn::Le(hn::Abs(kf), hn::Set(d, 125.0f))))) {
    return hn::BitCast(d, hn::Add(hn::BitCast(di, y), hn::ShiftLeft<23>(k)));
  }
  const auto k1 = hn::ShiftRight<1>(k);
  const auto bias = hn::Set(di, 127);
  const V p1 = hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(k1, bias)));
  const V p2 = hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(hn::Sub(k, k1), bias)));
  return hn::Mul(hn::Mul(y, p1), p2);
}

template <class D, class V>
HWY_INLINE V Expm1Reduced(D d, V x, V* kf, hn::Vec<hn::RebindToSigned<D>>* ki) {
  const hn::RebindToSigned<D> di;
  const V magic = hn::Set(d, 12582912.0f);  // 1.5 * 2^23
  const V kt = hn::MulAdd(x, hn::Set(d, 1.44269504088896341f), magic);
  *kf = hn::Sub(kt, magic);
  *ki = hn::Sub(hn::BitCast(di, kt), hn::BitCast(di, magic));
  V r = hn::MulAdd(*kf, hn::Set(d, -0.693145751953125f), x);
  r = hn::MulAdd(*kf, hn::Set(d, -1.428606765330187045e-6f), r);
  return hn::MulAdd(Poly(d, r, kExpm1F32), hn::Mul(r, r), r);  // e^r - 1
}

template <class D, class V>
HWY_INLINE V ExpF32Core(D d, V x) {
  V kf;
  hn::Vec<hn::RebindToSigned<D>> ki;
  const V em1 = Expm1Reduced(d, x, &kf, &ki);
  return ScaleByPow2(d, hn::Add(em1, hn::Set(d, 1.0f)), kf, ki);
}

template <class D, class V>
HWY_INLINE V Expm1F32Core(D d, V x) {
  V kf;
  hn::Vec<hn::RebindToSigned<D>> ki;
  const V one = hn::Set(d, 1.0f);
  const V em1 = Expm1Reduced(d, x, &kf, &ki);
  // k == 0 (|x| < ln2/2): e^x - 1 = em1 without cancellation.
  return hn::IfThenElse(hn::Eq(kf, hn::Zero(d)), em1, hn::Sub(ScaleByPow2(d, hn::Add(em1, one), kf, ki), one));
}

// exp with IEEE special values: +Inf above ln(max), gradual underflow, exp(-Inf) = 0, NaN -> NaN.
// The f32 core takes NaN through without any integer conversion; the argument is clamped to
// [-105, 89] (89 still overflows to +Inf through the scale factor). f64 uses Highway's Exp (valid on
// [-max, 706], 0 below -1000), with the argument clamped to [-1001, 710] and NaN kept out of its
// float -> int conversion and restored.
template <class D, class V>
HWY_NOINLINE V ExpF32General(D d, V x) {
  return ExpF32Core(d, ClampNaN(d, x, hn::Set(d, -105.0f), hn::Set(d, 89.0f)));
}

template <class D, class V>
HWY_INLINE V ExpV(D d, V x) {
  using T = hn::TFromD<D>;
  if constexpr (sizeof(T) == 4) {
    V e;
    if (HWY_LIKELY(TryExpF32<false>(d, x, &e))) return e;
    return ExpF32General(d, x);
  } else {
    const auto nan = hn::IsNaN(x);
    const V xc = hn::IfThenZeroElse(nan, hn::Min(hn::Max(x, hn::Set(d, -1001.0)), hn::Set(d, 710.0)));
    return hn::IfThenElse(nan, x, hn::Exp(d, xc));
  }
}

// exp for x <= 0, -Inf or NaN (the stable sigmoid, erfc, Softmax): only the lower clamp.
template <class D, class V>
HWY_INLINE V ExpNonPos(D d, V x) {
  if constexpr (sizeof(hn::TFromD<D>) == 4) {
    V e;
    if (HWY_LIKELY(TryExpF32<false>(d, x, &e))) return e;
    return ExpF32General(d, x);
  } else {
    return ExpV(d, x);
  }
}

// expm1; expm1(-0) = -0 and NaN -> NaN (both return x).
template <class D, class V>
HWY_INLINE V Expm1V(D d, V x) {
  using T = hn::TFromD<D>;
  constexpr bool k32 = sizeof(T) == 4;
  const auto keep = hn::Or(hn::IsNaN(x), hn::Eq(x, hn::Zero(d)));
  const V xc = hn::IfThenZeroElse(keep, hn::Min(hn::Max(x, hn::Set(d, T(k32 ? -105.0 : -1001.0))),
                                                hn::Set(d, T(k32 ? 89.0 : 710.0))));
  if constexpr (k32) {
    return hn::IfThenElse(keep, x, Expm1F32Core(d, xc));
  } else {
    return hn::IfThenElse(keep, x, hn::Expm1(d, xc));
  }
}

// log: log(+-0) = -Inf, log(x < 0) = NaN, log(+Inf) = +Inf, NaN -> NaN.
template <class D, class V>
HWY_INLINE V LogV(D d, V x) {
  using T = hn::TFromD<D>;
  const V inf = hn::Set(d, std::numeric_limits<T>::infinity());
  const auto ok = hn::And(hn::Gt(x, hn::Zero(d)), hn::Lt(x, inf));
  const V special = hn::IfThenElse(hn::Eq(x, hn::Zero(d)), hn::Neg(inf),
                                   hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::Set(d, std::numeric_limits<T>::quiet_NaN()), x));
  return hn::IfThenElse(ok, hn::Log(d, hn::IfThenElse(ok, x, hn::Set(d, T(1)))), special);
}

// log1p: log1p(-1) = -Inf, x < -1 -> NaN, +Inf -> +Inf, NaN -> NaN, log1p(-0) = -0.
template <class D, class V>
HWY_INLINE V Log1pV(D d, V x) {
  using T = hn::TFromD<D>;
  const V inf = hn::Set(d, std::numeric_limits<T>::infinity());
  const V m1 = hn::Set(d, T(-1));
  const auto ok = hn::And(hn::Gt(x, m1), hn::Lt(x, inf));
  const V special = hn::IfThenElse(hn::Eq(x, m1), hn::Neg(inf),
                                   hn::IfThenElse(hn::Lt(x, m1), hn::Set(d, std::numeric_limits<T>::quiet_NaN()), x));
  return hn::IfThenElse(ok, hn::Log1p(d, hn::IfThenElseZero(ok, x)), special);
}

// log1p(w) for w in [0, 1] or NaN (w = exp(-|x|) in Softplus and LogSigmoid): f32 w * P(w)
// (relative error of P 5.4e-9), f64 Highway's Log1p.
template <class D, class V>
HWY_INLINE V Log1pUnit(D d, V w) {
  if constexpr (sizeof(hn::TFromD<D>) == 4) {
    return hn::Mul(w, Poly(d, w, kLog1pF32));
  } else {
    return hn::Log1p(d, w);
  }
}

// tanh. f32: |x| < 0.625: x + x^3 P(x^2); otherwise 1 - 2 / (exp(2|x|) + 1) (no cancellation: the
// result is >= 0.55), with the sign of x. f64: sign(x) expm1(2|x|) / (expm1(2|x|) + 2), 1 beyond
// 18.71 (Highway's Tanh with our expm1).
template <class D, class V>
HWY_INLINE V TanhV(D d, V x) {
  using T = hn::TFromD<D>;
  if constexpr (sizeof(T) == 4) {  // x P(x^2) / Q(x^2) on the clamped x; NaN and -0 pass
    const V xc = ClampSymNaN(d, x, kTanhClampF32);
    const V x2 = hn::Mul(xc, xc);
    const V num = hn::Mul(xc, Horner(d, x2, kTanhNumF32));
    const V r = hn::Div(num, Horner(d, x2, kTanhDenF32));  // 1 - 2^-24 at the clamp
    // |x| > 9: tanh(x) rounds to +-1 exactly (as libm's), including +-Inf.
    return hn::IfThenElse(hn::Gt(hn::Abs(x), hn::Set(d, 9.0f)), hn::CopySignToAbs(hn::Set(d, 1.0f), x), r);
  }
  const V sign = hn::And(hn::SignBit(d), x);
  const V a = hn::Xor(x, sign);
  V z;
  const V y = Expm1V(d, hn::Add(a, a));
  z = hn::IfThenElse(hn::Gt(a, hn::Set(d, T(18.714973875))), hn::Set(d, T(1)),
                     hn::Div(y, hn::Add(y, hn::Set(d, T(2)))));
  return hn::Xor(z, sign);
}

// Stable logistic: 1/(1+e) for x >= 0, e/(1+e) for x < 0, e = exp(-|x|) (one division, as the
// reference).
template <class D, class V>
HWY_INLINE V SigmoidGeneral(D d, V x) {
  using T = hn::TFromD<D>;
  const V one = hn::Set(d, T(1));
  const V e = ExpNonPos(d, hn::Neg(hn::Abs(x)));
  return hn::Div(hn::IfThenElse(hn::Lt(x, hn::Zero(d)), e, one), hn::Add(one, e));
}

// x * gate, and a zero with the sign of x where the gate is exactly 0 (f(-Inf) = -0, not NaN).
template <class D, class V>
HWY_INLINE V Gated(D d, V x, V gate) {
  return hn::IfThenElse(hn::Eq(gate, hn::Zero(d)), hn::And(x, hn::SignBit(d)), hn::Mul(x, gate));
}

// num / (1 + exp(-v)) = num sigmoid(v). f32 fast path while exp(-v) is a normal number in every lane
// (|v| <= ~86): no cancellation for either sign (1 + e >= 1), so this is as accurate as the stable
// form. Other vectors (NaN, +-Inf, |v| large) take the general form, with kGated: num = x and the
// gate rule (x * 0 = zero with the sign of x). Lanes are computed independently, so the path taken
// does not change a lane's result beyond rounding.
template <bool kGated, class D, class V>
HWY_NOINLINE V SigmoidTimesGeneral(D d, V num, V v) {
  const V s = SigmoidGeneral(d, v);
  return kGated ? Gated(d, num, s) : hn::Mul(num, s);
}

template <bool kGated, class D, class V>
HWY_INLINE V SigmoidTimes(D d, V num, V v) {
  if constexpr (sizeof(hn::TFromD<D>) == 4) {
    V e;
    if (HWY_LIKELY(TryExpF32<true>(d, v, &e))) return hn::Div(num, hn::Add(hn::Set(d, 1.0f), e));
  }
  return SigmoidTimesGeneral<kGated>(d, num, v);
}

template <class D, class V>
HWY_INLINE V SigmoidV(D d, V x) {
  return SigmoidTimes<false>(d, hn::Set(d, hn::TFromD<D>(1)), x);
}

// erfc(z) (kHalf: erfc(z) / 2, the 1/2 folded into t), see the file comment. exp(-a^2) does not
// depend on the polynomial, so the two chains run in parallel; with native FMA the rounding error
// of a*a is recovered (a^2 = p + err exactly) and applied as exp(-p) (1 - err), so the relative
// error does not grow with a^2.
template <bool kHalf, class D, class V>
HWY_INLINE V ErfcV(D d, V z) {
  using T = hn::TFromD<D>;
  constexpr bool k32 = sizeof(T) == 4;
  const V one = hn::Set(d, T(1));
  const V amax = hn::Set(d, k32 ? T(kErfcMaxF32) : T(kErfcMaxF64));
  const V a = hn::Abs(z);
  const V ac = hn::IfThenElse(hn::Gt(a, amax), amax, a);  // erfc underflows beyond amax; NaN passes
  const V den = hn::MulAdd(hn::Set(d, T(0.5)), ac, one);
  const T scale = kHalf ? T(2) : T(1);  // t = scale * tk, tk = t / 2 for kHalf
  const V tk = hn::Div(hn::Set(d, T(1) / scale), den);
  V h;
  if constexpr (k32) {
    h = Poly(d, hn::MulAdd(tk, hn::Set(d, scale * kErfcAF32), hn::Set(d, kErfcBF32)), kErfcF32);
  } else {
    h = Poly(d, hn::MulAdd(tk, hn::Set(d, scale * kErfcAF64), hn::Set(d, kErfcBF64)), kErfcF64);
  }
  const V p = hn::Mul(ac, ac);
  V e = ExpNonPos(d, hn::Neg(p));
#if HWY_NATIVE_FMA
  e = hn::NegMulAdd(e, hn::MulSub(ac, ac, p), e);
#endif
  const V r = hn::Mul(hn::Mul(tk, h), e);
  return hn::IfThenElse(hn::Lt(z, hn::Zero(d)), hn::Sub(hn::Set(d, T(2) / scale), r), r);
}

template <class D, class V>
HWY_INLINE V ClampV(D d, V x, hn::TFromD<D> lo, hn::TFromD<D> hi) {
  return ClampNaN(d, x, hn::Set(d, lo), hn::Set(d, hi));
}

// ---- Element functions (the reference's formulas, evaluated in T) ------------------------------

template <class D, class V>
HWY_INLINE V SiluV(D d, V x) {
  return SigmoidTimes<true>(d, x, x);
}

template <class D, class V>
HWY_NOINLINE V GeluGeneral(D d, V x) {  // 0.5 x erfc(-x / sqrt2)
  using T = hn::TFromD<D>;
  const V phi = ErfcV<true>(d, hn::Mul(hn::Neg(x), hn::Set(d, T(0.70710678118654752440))));
  return Gated(d, x, phi);
}

// f32 fast path, every lane |x| < 13: gelu = x Q(|x|) for x <= 0 and x - x Q(|x|) for x > 0 (Q <= 1/2:
// no cancellation), with Q as at kGeluNumF32 (18 multiplies/FMAs and a division per vector, which
// bound this loop; exp is the 2^k 2^f of ExpSoftmax). The rounding of s = x log2(e)/2
// (and of that constant) gives exp(-x^2/2) a relative error up to 1.5 (x^2/2) 2^-24 (7.6e-6 at
// |x| = 13, where |gelu| < 1e-37; the reference's erfcf(-x / sqrt2) has x^2 2^-24 from its
// argument). Otherwise (NaN, Inf, |x| >= 13) the general erfc form.
template <class D, class V>
HWY_INLINE V GeluV(D d, V x) {
  if constexpr (sizeof(hn::TFromD<D>) == 4) {
    const V a = hn::Abs(x);
    if (HWY_LIKELY(hn::AllTrue(d, hn::Lt(a, hn::Set(d, kGeluFastMaxF32))))) {
      // exp(-x^2/2) = 2^k 2^f as in ExpSoftmax, with -x^2 log2(e) / 2 = s x, s = x (-log2(e) / 2):
      // k >= -122, so the result is normal.
      const hn::RebindToSigned<D> di;
      const V magic = hn::Set(d, 12582912.0f);
      const V sx = hn::Mul(x, hn::Set(d, -0.721347520444481703680f));
      const V kt = hn::MulAdd(sx, x, magic);
      const V kf = hn::Sub(kt, magic);
      const V f = hn::MulSub(sx, x, kf);
      const V p = hn::MulAdd(Horner(d, f, kExp2F32), f, hn::Set(d, 1.0f));
      const V e = hn::BitCast(d, hn::Add(hn::BitCast(di, p), hn::ShiftLeft<23>(hn::BitCast(di, kt))));
      const V q = hn::Div(hn::Mul(e, Horner(d, a, kGeluNumF32)), Horner(d, a, kGeluDenF32));
      const V xq = hn::Mul(x, q);
      return hn::IfThenElse(hn::Le(x, hn::Zero(d)), xq, hn::Sub(x, xq));  // -0 stays -0
    }
  }
  return GeluGeneral(d, x);
}

template <class D, class V>
HWY_INLINE V GeluTanhV(D d, V x) {  // x sigmoid(2u), u = sqrt(2/pi)(x + 0.044715 x^3)
  using T = hn::TFromD<D>;
  if constexpr (sizeof(T) == 4) {  // 2u = x (2c + 2c 0.044715 x^2), c = sqrt(2/pi)
    const V v = hn::Mul(x, hn::MulAdd(hn::Mul(x, x), hn::Set(d, 0.0713548162726f), hn::Set(d, 1.5957691216057308f)));
    return SigmoidTimes<true>(d, x, v);
  }
  const V cube = hn::Mul(hn::Mul(hn::Mul(hn::Set(d, T(0.044715)), x), x), x);
  const V u = hn::Mul(hn::Set(d, T(0.79788456080286535588)), hn::Add(x, cube));
  return Gated(d, x, SigmoidGeneral(d, hn::Add(u, u)));
}

template <class D, class V>
HWY_INLINE V ReluV(D d, V x) {  // NaN and -0 pass
  return hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::Zero(d), x);
}

// x > 20 ? x : log1p(exp(x)), evaluated as max(x, 0) + log1p(exp(-|x|)) (the same function; the
// log1p argument stays in [0, 1]).
template <class D, class V>
HWY_INLINE V SoftplusV(D d, V x) {
  using T = hn::TFromD<D>;
  const V pos = hn::IfThenElseZero(hn::Gt(x, hn::Zero(d)), x);
  const V r = hn::Add(pos, Log1pUnit(d, ExpNonPos(d, hn::Neg(hn::Abs(x)))));
  return hn::IfThenElse(hn::Gt(x, hn::Set(d, T(20))), x, r);
}

// x tanh(softplus(x)); tanh(log1p(e)) = n / (n + 2) with n = e (e + 2), e = exp(x), exact
// algebra without cancellation; the gate is 1 for x > 20 (tanh(x) rounds to 1 there in f32 and f64).
template <class D, class V>
HWY_INLINE V MishV(D d, V x) {
  using T = hn::TFromD<D>;
  const V two = hn::Set(d, T(2));
  const V twenty = hn::Set(d, T(20));
  const auto big = hn::Gt(x, twenty);
  const V e = ExpV(d, hn::IfThenElse(big, twenty, x));
  const V n = hn::Mul(e, hn::Add(e, two));
  const V gate = hn::IfThenElse(big, hn::Set(d, T(1)), hn::Div(n, hn::Add(n, two)));
  return Gated(d, x, gate);
}

template <class D, class V>
HWY_INLINE V HardSigmoidV(D d, V x) {  // relu6(x + 3) / 6
  using T = hn::TFromD<D>;
  return hn::Div(ClampV(d, hn::Add(x, hn::Set(d, T(3))), T(0), T(6)), hn::Set(d, T(6)));
}

template <class D, class V>
HWY_INLINE V EluLike(D d, V x, V negative) {  // x > 0 ? x : negative
  return hn::IfThenElse(hn::Gt(x, hn::Zero(d)), x, negative);
}

template <class D, class V>
HWY_INLINE V UnaryOpV(D d, int op, V x) {
  using T = hn::TFromD<D>;
  switch (op) {
    case kExp: return ExpV(d, x);
    case kLog: return LogV(d, x);
    case kLog1p: return Log1pV(d, x);
    case kExpm1: return Expm1V(d, x);
    case kSigmoid: return SigmoidV(d, x);
    case kLogSigmoid: {  // min(x, 0) - log1p(exp(-|x|))
      const V lower = hn::IfThenElseZero(hn::Lt(x, hn::Zero(d)), x);
      return hn::Sub(lower, Log1pUnit(d, ExpNonPos(d, hn::Neg(hn::Abs(x)))));
    }
    case kTanh: return TanhV(d, x);
    case kSilu: return SiluV(d, x);
    case kGeluTanh: return GeluTanhV(d, x);
    case kGelu: return GeluV(d, x);
    case kReLU: return ReluV(d, x);
    case kLeakyReLU: return EluLike(d, x, hn::Mul(x, hn::Set(d, static_cast<T>(0.01))));
    case kELU: return EluLike(d, x, Expm1V(d, x));  // alpha = 1 (CELU with alpha 1 is the same)
    case kSELU: {
      const V alpha = hn::Set(d, T(1.6732632423543772848170429916717));
      const V scale = hn::Set(d, T(1.0507009873554804934193349852946));
      return hn::Mul(scale, EluLike(d, x, hn::Mul(alpha, Expm1V(d, x))));
    }
    case kSoftplus: return SoftplusV(d, x);
    case kMish: return MishV(d, x);
    case kSoftsign: {  // x / (1 + |x|), +-1 at +-Inf
      const V one = hn::Set(d, T(1));
      return hn::IfThenElse(hn::IsInf(x), hn::CopySign(one, x), hn::Div(x, hn::Add(one, hn::Abs(x))));
    }
    case kHardSigmoid: return HardSigmoidV(d, x);
    case kHardSwish: return Gated(d, x, HardSigmoidV(d, x));  // also HardGelu
    case kHardTanh: return ClampV(d, x, T(-1), T(1));
    case kQuickGelu: return SigmoidTimes<true>(d, x, hn::Mul(hn::Set(d, T(1.702)), x));
    case kTanhShrink: return hn::Sub(x, TanhV(d, x));
  }
  return x;
}

// ---- Drivers ----------------------------------------------------------------------------------

// y[i] = f(d, x[i]) for a functor f; full vectors, then the tail through a zeroed aligned buffer.
// (Highway 1.0.3's MaskedLoad is an aligned full-vector load on SSSE3/SSE4: it faults on an
// unaligned tail and reads past the end, so it is not used.)
template <class D, class F>
HWY_INLINE void Map1(D d, const F& f, const hn::TFromD<D>* x, hn::TFromD<D>* y, size_t n) {
  using T = hn::TFromD<D>;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {  // two independent chains per iteration
    const auto v0 = f(d, hn::LoadU(d, x + i));
    const auto v1 = f(d, hn::LoadU(d, x + i + lanes));
    hn::StoreU(v0, d, y + i);
    hn::StoreU(v1, d, y + i + lanes);
  }
  for (; i + lanes <= n; i += lanes) hn::StoreU(f(d, hn::LoadU(d, x + i)), d, y + i);
  if (i < n) {
    HWY_ALIGN T buf[hn::MaxLanes(d)] = {};
    for (size_t k = 0; k < n - i; ++k) buf[k] = x[i + k];
    hn::Store(f(d, hn::Load(d, buf)), d, buf);
    for (size_t k = 0; k < n - i; ++k) y[i + k] = buf[k];
  }
}

// out[i] = f(d, a[i], b[i]).
template <class D, class F>
HWY_INLINE void Map2(D d, const F& f, const hn::TFromD<D>* a, const hn::TFromD<D>* b, hn::TFromD<D>* out,
                     size_t n) {
  using T = hn::TFromD<D>;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(f(d, hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d, out + i);
  if (i < n) {
    HWY_ALIGN T ba[hn::MaxLanes(d)] = {};
    HWY_ALIGN T bb[hn::MaxLanes(d)] = {};
    for (size_t k = 0; k < n - i; ++k) {
      ba[k] = a[i + k];
      bb[k] = b[i + k];
    }
    hn::Store(f(d, hn::Load(d, ba), hn::Load(d, bb)), d, ba);
    for (size_t k = 0; k < n - i; ++k) out[i + k] = ba[k];
  }
}

template <int kOp>
struct UnaryF {
  template <class D, class V>
  HWY_INLINE V operator()(D d, V x) const {
    return UnaryOpV(d, kOp, x);
  }
};

template <class T>
void UnaryTyped(int op, const T* x, T* y, size_t n) {
  const hn::ScalableTag<T> d;
  switch (op) {
#define BP_ACT_CASE(K) \
  case K: return Map1(d, UnaryF<K>(), x, y, n);
    BP_ACT_CASE(kExp)
    BP_ACT_CASE(kLog)
    BP_ACT_CASE(kLog1p)
    BP_ACT_CASE(kExpm1)
    BP_ACT_CASE(kSigmoid)
    BP_ACT_CASE(kLogSigmoid)
    BP_ACT_CASE(kTanh)
    BP_ACT_CASE(kSilu)
    BP_ACT_CASE(kGeluTanh)
    BP_ACT_CASE(kGelu)
    BP_ACT_CASE(kReLU)
    BP_ACT_CASE(kLeakyReLU)
    BP_ACT_CASE(kELU)
    BP_ACT_CASE(kSELU)
    BP_ACT_CASE(kSoftplus)
    BP_ACT_CASE(kMish)
    BP_ACT_CASE(kSoftsign)
    BP_ACT_CASE(kHardSigmoid)
    BP_ACT_CASE(kHardSwish)
    BP_ACT_CASE(kHardTanh)
    BP_ACT_CASE(kQuickGelu)
    BP_ACT_CASE(kTanhShrink)
#undef BP_ACT_CASE
  }
}

// ---- Parametric --------------------------------------------------------------------------------

// Snake lanes whose argument alpha*x is beyond Highway's Sin range (finite x only) take libm.
template <class T>
HWY_NOINLINE void SnakeScalar(T* v, size_t lanes, T alpha, T beta) {
  for (size_t k = 0; k < lanes; ++k) {
    const T x = v[k];
    if (std::isinf(x)) continue;
    const T s = std::sin(alpha * x);
    v[k] = x + s * s / beta;
  }
}

template <class T, int kOp>
struct ParamF {
  T p1, p2;
  template <class D, class V>
  HWY_INLINE V operator()(D d, V x) const {
    const V zero = hn::Zero(d);
    switch (kOp) {
      case kLeaky: return EluLike(d, x, hn::Mul(x, hn::Set(d, p1)));
      case kEluAlpha: return EluLike(d, x, hn::Mul(hn::Set(d, p1), Expm1V(d, x)));
      case kCeluAlpha: {
        const V alpha = hn::Set(d, p1);
        return EluLike(d, x, hn::Mul(alpha, Expm1V(d, hn::Div(x, alpha))));
      }
      case kThreshold: return hn::IfThenElse(hn::Le(x, hn::Set(d, p1)), zero, x);
      case kHardShrink: {
        const V lambda = hn::Set(d, p1);
        return hn::IfThenElse(hn::And(hn::Ge(x, hn::Neg(lambda)), hn::Le(x, lambda)), zero, x);
      }
      case kSoftShrink: {
        const V lambda = hn::Set(d, p1);
        const V r = hn::IfThenElse(hn::Gt(x, lambda), hn::Sub(x, lambda),
                                   hn::IfThenElse(hn::Lt(x, hn::Neg(lambda)), hn::Add(x, lambda), zero));
        return hn::IfThenElse(hn::IsNaN(x), x, r);
      }
      case kClamp: return ClampV(d, x, p1, p2);
      case kSnake: {  // x + sin^2(alpha x) / beta; +-Inf stays +-Inf
        const V v = hn::Mul(hn::Set(d, p1), x);
        const auto in_range = hn::Le(hn::Abs(v), hn::Set(d, static_cast<T>(kSinLimit)));
        const auto inf = hn::IsInf(x);
        if (HWY_UNLIKELY(!hn::AllTrue(d, hn::Or(in_range, hn::Or(inf, hn::IsNaN(x)))))) {
          HWY_ALIGN T lanes[hn::MaxLanes(d)];
          hn::Store(x, d, lanes);
          SnakeScalar(lanes, hn::Lanes(d), p1, p2);
          return hn::Load(d, lanes);
        }
        const V s = hn::Sin(d, hn::IfThenElseZero(in_range, v));
        return hn::IfThenElse(inf, x, hn::Add(x, hn::Div(hn::Mul(s, s), hn::Set(d, p2))));
      }
    }
    return x;
  }
};

template <class T>
void ParamTyped(int op, double p1, double p2, const T* x, T* y, size_t n) {
  const hn::ScalableTag<T> d;
  const T a = static_cast<T>(p1), b = static_cast<T>(p2);
  switch (op) {
    case kLeaky: return Map1(d, ParamF<T, kLeaky>{a, b}, x, y, n);
    case kEluAlpha: return Map1(d, ParamF<T, kEluAlpha>{a, b}, x, y, n);
    case kCeluAlpha: return Map1(d, ParamF<T, kCeluAlpha>{a, b}, x, y, n);
    case kThreshold: return Map1(d, ParamF<T, kThreshold>{a, b}, x, y, n);
    case kSnake: return Map1(d, ParamF<T, kSnake>{a, b}, x, y, n);
    case kHardShrink: return Map1(d, ParamF<T, kHardShrink>{a, b}, x, y, n);
    case kSoftShrink: return Map1(d, ParamF<T, kSoftShrink>{a, b}, x, y, n);
    case kClamp: return Map1(d, ParamF<T, kClamp>{a, b}, x, y, n);
  }
}

// ---- PReLUV: y = x > 0 ? x : slope * x, slopes (f32) aligned with x ---------------------------

template <class D>
HWY_INLINE hn::Vec<D> LoadSlopes(D d, const float* s) {
  if constexpr (sizeof(hn::TFromD<D>) == 4) {
    return hn::LoadU(d, s);
  } else {
    return hn::PromoteTo(d, hn::LoadU(hn::Rebind<float, D>(), s));
  }
}

template <class T>
void PreluCore(const T* x, T* y, const float* s, size_t n) {
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto v = hn::LoadU(d, x + i);
    hn::StoreU(EluLike(d, v, hn::Mul(v, LoadSlopes(d, s + i))), d, y + i);
  }
  for (; i < n; ++i) y[i] = x[i] > T(0) ? x[i] : x[i] * static_cast<T>(s[i]);
}

// n is a multiple of the period P. Short periods are repeated into a pattern of whole periods.
template <class T>
void PreluTyped(const T* x, T* y, const float* slopes, size_t n, size_t period) {
  if (period >= kBlock) {
    for (size_t r = 0; r < n; r += period) PreluCore(x + r, y + r, slopes, period);
    return;
  }
  HWY_ALIGN float pattern[kBlock];
  const size_t len = (kBlock / period) * period;
  for (size_t k = 0; k < len; ++k) pattern[k] = slopes[k % period];
  for (size_t i = 0; i < n; i += len) PreluCore(x + i, y + i, pattern, n - i < len ? n - i : len);
}

// ---- Gated linear units: dst row r = f(gate row r, up row r) ------------------------------------

template <int kOp>
struct GluF {
  template <class D, class V>
  HWY_INLINE V operator()(D d, V g, V u) const {
    switch (kOp) {
      case kGlu: return hn::Mul(g, SigmoidV(d, u));
      case kGeGlu: return hn::Mul(g, GeluV(d, u));
      case kGeGluTanh: return hn::Mul(g, GeluTanhV(d, u));
      case kSwiGlu: return hn::Mul(SiluV(d, g), u);
      case kReGlu: return hn::Mul(g, ReluV(d, u));
      case kSiGlu: return hn::Mul(SigmoidV(d, g), u);
      case kLinGlu: return hn::Mul(g, u);
    }
    return g;
  }
};

template <class T, int kOp>
void GluRows(const T* gate, const T* up, T* dst, size_t rows, size_t half, size_t stride) {
  const hn::ScalableTag<T> d;
  for (size_t r = 0; r < rows; ++r) Map2(d, GluF<kOp>(), gate + r * stride, up + r * stride, dst + r * half, half);
}

template <class T>
void GluTyped(int op, const T* gate, const T* up, T* dst, size_t rows, size_t half, size_t stride) {
  switch (op) {
    case kGlu: return GluRows<T, kGlu>(gate, up, dst, rows, half, stride);
    case kGeGlu: return GluRows<T, kGeGlu>(gate, up, dst, rows, half, stride);
    case kGeGluTanh: return GluRows<T, kGeGluTanh>(gate, up, dst, rows, half, stride);
    case kSwiGlu: return GluRows<T, kSwiGlu>(gate, up, dst, rows, half, stride);
    case kReGlu: return GluRows<T, kReGlu>(gate, up, dst, rows, half, stride);
    case kSiGlu: return GluRows<T, kSiGlu>(gate, up, dst, rows, half, stride);
    case kLinGlu: return GluRows<T, kLinGlu>(gate, up, dst, rows, half, stride);
  }
}

// ---- Softmax / LogSoftmax passes ---------------------------------------------------------------
// Pass 1: the maximum ignoring NaN, and whether a NaN or +Inf was seen. Pass 2: sum of exp(x - m)
// (f64 lanes; f32 lanes flushed into f64 every 16 vectors, see SumExpF32Impl). Pass 3: scale by
// 1/sum, or subtract log(sum). A chunk's partial results are combined in chunk order.

template <class T>
void StatsTyped(const T* x, size_t n, double* max_out, int* bad_out) {
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d);
  const T inf = std::numeric_limits<T>::infinity();
  auto vmax = hn::Set(d, -inf);
  auto nan = hn::Zero(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto v = hn::LoadU(d, x + i);
    vmax = hn::IfThenElse(hn::Gt(v, vmax), v, vmax);
    nan = hn::Or(nan, hn::VecFromMask(d, hn::IsNaN(v)));
  }
  T m = hn::GetLane(hn::MaxOfLanes(d, vmax));
  bool bad = !hn::AllFalse(d, hn::MaskFromVec(nan));
  for (; i < n; ++i) {
    if (std::isnan(x[i])) bad = true;
    if (x[i] > m) m = x[i];
  }
  *max_out = static_cast<double>(m);
  *bad_out = (bad || m == inf) ? 1 : 0;
}

template <class T>
struct SubExpF {
  T m;
  template <class D, class V>
  HWY_INLINE V operator()(D d, V x) const {
    return ExpNonPos(d, hn::Sub(x, hn::Set(d, m)));
  }
};

// f64 sum of the f32 lanes of v (through an aligned buffer: portable to every target).
template <class D, class V>
HWY_INLINE hn::Vec<hn::ScalableTag<double>> PromoteSum(D d, V v) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> dh;
  HWY_ALIGN float buf[hn::MaxLanes(d)];
  hn::Store(v, d, buf);
  auto acc = hn::Zero(dd);
  for (size_t j = 0; j < hn::Lanes(d); j += hn::Lanes(dd)) acc = hn::Add(acc, hn::PromoteTo(dd, hn::Load(dh, buf + j)));
  return acc;
}

// f32: sum of e = exp(x - m) <= 1 (e also stored to y when y is not null). Each f32 lane adds at
// most kFlush + 1 terms before its partial sum is added into f64 lanes, so the relative error of the
// sum is at most kFlush 2^-24 < 1e-6 (then f64): within the tolerance of every output
// (Softmax outputs are <= 1 with abs tolerance 1e-5; LogSoftmax shifts by log(sum)).
HWY_INLINE double SumExpF32Impl(const float* x, size_t n, float m, float* y) {
  const hn::ScalableTag<float> d;
  const hn::ScalableTag<double> dd;
  constexpr size_t kFlush = 16;
  const size_t lanes = hn::Lanes(d);
  const auto vm = hn::Set(d, m);
  auto acc64 = hn::Zero(dd);
  auto acc = hn::Zero(d);
  auto acc1 = hn::Zero(d);
  size_t i = 0, count = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {  // two chains, kFlush terms each per flush
    const auto e0 = ExpNonPos(d, hn::Sub(hn::LoadU(d, x + i), vm));
    const auto e1 = ExpNonPos(d, hn::Sub(hn::LoadU(d, x + i + lanes), vm));
    if (y != nullptr) {
      hn::StoreU(e0, d, y + i);
      hn::StoreU(e1, d, y + i + lanes);
    }
    acc = hn::Add(acc, e0);
    acc1 = hn::Add(acc1, e1);
    if (++count == kFlush) {
      acc64 = hn::Add(acc64, hn::Add(PromoteSum(d, acc), PromoteSum(d, acc1)));
      acc = hn::Zero(d);
      acc1 = hn::Zero(d);
      count = 0;
    }
  }
  for (; i + lanes <= n; i += lanes) {  // at most one vector: acc then holds <= kFlush + 1 terms
    const auto e = ExpNonPos(d, hn::Sub(hn::LoadU(d, x + i), vm));
    if (y != nullptr) hn::StoreU(e, d, y + i);
    acc = hn::Add(acc, e);
  }
  acc64 = hn::Add(acc64, hn::Add(PromoteSum(d, acc), PromoteSum(d, acc1)));
  double sum = hn::GetLane(hn::SumOfLanes(dd, acc64));
  if (i < n) {  // tail through a zeroed buffer; the padding lanes are not summed
    HWY_ALIGN float buf[hn::MaxLanes(d)] = {};
    for (size_t k = 0; k < n - i; ++k) buf[k] = x[i + k];
    hn::Store(ExpNonPos(d, hn::Sub(hn::Load(d, buf), vm)), d, buf);
    for (size_t k = 0; k < n - i; ++k) {
      sum += static_cast<double>(buf[k]);
      if (y != nullptr) y[i + k] = buf[k];
    }
  }
  return sum;
}

HWY_INLINE double SumNative(const double* e, size_t n) {
  const hn::ScalableTag<double> dd;
  const size_t lanes = hn::Lanes(dd);
  auto a0 = hn::Zero(dd), a1 = hn::Zero(dd);
  size_t j = 0;
  for (; j + 2 * lanes <= n; j += 2 * lanes) {
    a0 = hn::Add(a0, hn::LoadU(dd, e + j));
    a1 = hn::Add(a1, hn::LoadU(dd, e + j + lanes));
  }
  double tail = 0.0;
  for (; j < n; ++j) tail += e[j];
  return hn::GetLane(hn::SumOfLanes(dd, hn::Add(a0, a1))) + tail;
}

// Sum of exp(x - m); the exponentials are also stored to y when y is not null.
template <class T>
double SumExpTyped(const T* x, size_t n, double m, T* y) {
  if constexpr (sizeof(T) == 4) {
    return SumExpF32Impl(x, n, static_cast<float>(m), y);
  } else {
    const hn::ScalableTag<T> d;
    HWY_ALIGN T buf[kBlock];
    double sum = 0.0;
    for (size_t b = 0; b < n; b += kBlock) {
      const size_t len = n - b < kBlock ? n - b : kBlock;
      T* e = y != nullptr ? y + b : buf;
      Map1(d, SubExpF<T>{static_cast<T>(m)}, x + b, e, len);
      sum += SumNative(e, len);
    }
    return sum;
  }
}

template <class T>
struct ScaleF {
  T s;
  template <class D, class V>
  HWY_INLINE V operator()(D d, V e) const {
    return hn::Mul(e, hn::Set(d, s));
  }
};

template <class T>
struct LogSoftF {
  T m, log_sum;
  template <class D, class V>
  HWY_INLINE V operator()(D d, V x) const {
    return hn::Sub(hn::Sub(x, hn::Set(d, m)), hn::Set(d, log_sum));
  }
};

// Softmax: y holds the exponentials from pass 2 and is scaled by 1/sum; LogSoftmax: y = (x - m) -
// log(sum) from x.
template <class T>
void FinishTyped(const T* x, size_t n, double m, double sum, T* y, bool logarithm) {
  const hn::ScalableTag<T> d;
  if (logarithm) {
    Map1(d, LogSoftF<T>{static_cast<T>(m), static_cast<T>(std::log(sum))}, x, y, n);
  } else {
    Map1(d, ScaleF<T>{static_cast<T>(1.0 / sum)}, y, y, n);
  }
}

// ---- Exported entry points -----------------------------------------------------------------------

// Non-temporal output for large results (the caller decides, from the total size): blocks are
// computed into an L1 buffer and streamed out, which saves the read-for-ownership of each output
// line. x86 only needs the sfence; elsewhere Stream is a plain store.
template <class T>
HWY_INLINE void StreamOut(const T* buf, T* y, size_t n) {
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d);
  size_t j = 0;
  while (j < n && reinterpret_cast<uintptr_t>(y + j) % (lanes * sizeof(T)) != 0) {
    y[j] = buf[j];
    ++j;
  }
  for (; j + lanes <= n; j += lanes) hn::Stream(hn::LoadU(d, buf + j), d, y + j);
  for (; j < n; ++j) y[j] = buf[j];
}

template <class T, class Compute>
HWY_INLINE void Streamed(T* y, size_t n, const Compute& compute) {
  constexpr size_t kStreamBlock = 256;  // small blocks keep reads and non-temporal writes interleaved
  HWY_ALIGN T buf[kStreamBlock];
  for (size_t b = 0; b < n; b += kStreamBlock) {
    const size_t len = n - b < kStreamBlock ? n - b : kStreamBlock;
    compute(b, len, buf);
    StreamOut(buf, y + b, len);
  }
#if HWY_ARCH_X86
  _mm_sfence();
#endif
}

template <class T>
void UnaryStream(int op, const T* x, T* y, size_t n, bool stream) {
  if (!stream) return UnaryTyped(op, x, y, n);
  Streamed(y, n, [&](size_t b, size_t len, T* out) HWY_ATTR {
    // Software prefetch 4 KiB ahead (the input is streamed once; the hardware prefetcher alone
    // leaves part of the memory latency exposed when the computation is the bottleneck).
    for (size_t k = 0; k < len; k += 64 / sizeof(T)) __builtin_prefetch(x + b + k + 4096 / sizeof(T), 0, 3);
    UnaryTyped(op, x + b, out, len);
  });
}

void UnaryF32(int op, const float* x, float* y, size_t n, bool stream) { UnaryStream(op, x, y, n, stream); }
void UnaryF64(int op, const double* x, double* y, size_t n, bool stream) { UnaryStream(op, x, y, n, stream); }
void UnaryHalf(int op, const uint16_t* x, uint16_t* y, size_t n, bool bf16) {
  HWY_ALIGN float f[kBlock];
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t m = n - i < kBlock ? n - i : kBlock;
    WidenBlock(x + i, f, m, bf16);
    UnaryTyped(op, f, f, m);
    NarrowBlock(f, y + i, m, bf16);
  }
}

template <class T>
void ParamStream(int op, double p1, double p2, const T* x, T* y, size_t n, bool stream) {
  if (!stream) return ParamTyped(op, p1, p2, x, y, n);
  Streamed(y, n, [&](size_t b, size_t len, T* out) HWY_ATTR { ParamTyped(op, p1, p2, x + b, out, len); });
}

void ParamF32(int op, double p1, double p2, const float* x, float* y, size_t n, bool stream) {
  ParamStream(op, p1, p2, x, y, n, stream);
}
void ParamF64(int op, double p1, double p2, const double* x, double* y, size_t n, bool stream) {
  ParamStream(op, p1, p2, x, y, n, stream);
}
void ParamHalf(int op, double p1, double p2, const uint16_t* x, uint16_t* y, size_t n, bool bf16) {
  HWY_ALIGN float f[kBlock];
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t m = n - i < kBlock ? n - i : kBlock;
    WidenBlock(x + i, f, m, bf16);
    ParamTyped(op, p1, p2, f, f, m);
    NarrowBlock(f, y + i, m, bf16);
  }
}

void PreluF32(const float* x, float* y, const float* s, size_t n, size_t p) { PreluTyped(x, y, s, n, p); }
void PreluF64(const double* x, double* y, const float* s, size_t n, size_t p) { PreluTyped(x, y, s, n, p); }
void PreluHalf(const uint16_t* x, uint16_t* y, const float* slopes, size_t n, size_t period, bool bf16) {
  HWY_ALIGN float f[kBlock];
  if (period >= kBlock) {
    for (size_t r = 0; r < n; r += period) {
      for (size_t j = 0; j < period; j += kBlock) {
        const size_t m = period - j < kBlock ? period - j : kBlock;
        WidenBlock(x + r + j, f, m, bf16);
        PreluCore(f, f, slopes + j, m);
        NarrowBlock(f, y + r + j, m, bf16);
      }
    }
    return;
  }
  HWY_ALIGN float pattern[kBlock];
  const size_t len = (kBlock / period) * period;
  for (size_t k = 0; k < len; ++k) pattern[k] = slopes[k % period];
  for (size_t i = 0; i < n; i += len) {
    const size_t m = n - i < len ? n - i : len;
    WidenBlock(x + i, f, m, bf16);
    PreluCore(f, f, pattern, m);
    NarrowBlock(f, y + i, m, bf16);
  }
}

// stream: one row (the tensors form) written with non-temporal stores.
template <class T>
void GluStream(int op, const T* g, const T* u, T* y, size_t rows, size_t half, size_t stride, bool stream) {
  if (!stream || rows != 1) return GluTyped(op, g, u, y, rows, half, stride);
  Streamed(y, half, [&](size_t b, size_t len, T* out) HWY_ATTR { GluTyped(op, g + b, u + b, out, 1, len, len); });
}

void GluF32(int op, const float* g, const float* u, float* y, size_t rows, size_t half, size_t stride, bool stream) {
  GluStream(op, g, u, y, rows, half, stride, stream);
}
void GluF64(int op, const double* g, const double* u, double* y, size_t rows, size_t half, size_t stride,
            bool stream) {
  GluStream(op, g, u, y, rows, half, stride, stream);
}
void GluHalf(int op, const uint16_t* g, const uint16_t* u, uint16_t* y, size_t rows, size_t half, size_t stride,
             bool bf16) {
  HWY_ALIGN float fg[kBlock];
  HWY_ALIGN float fu[kBlock];
  for (size_t r = 0; r < rows; ++r) {
    for (size_t j = 0; j < half; j += kBlock) {
      const size_t m = half - j < kBlock ? half - j : kBlock;
      WidenBlock(g + r * stride + j, fg, m, bf16);
      WidenBlock(u + r * stride + j, fu, m, bf16);
      GluTyped(op, fg, fu, fg, 1, m, m);
      NarrowBlock(fg, y + r * half + j, m, bf16);
    }
  }
}

// f32: the maximum only (Max, four chains). A NaN anywhere may or may not reach the maximum
// (Max's NaN rule differs between targets); if it does not, it makes the sum of pass 2 NaN, which
// the driver checks, so every output is NaN either way.
// The output y is prefetched for writing, so that its read-for-ownership overlaps the reads of x
// instead of stalling the stores of the later passes.
void StatsF32(const float* x, size_t n, double* m, int* bad, float* y) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  const float inf = std::numeric_limits<float>::infinity();
  auto m0 = hn::Set(d, -inf), m1 = m0, m2 = m0, m3 = m0;
  size_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    for (size_t k = 0; k < 4 * lanes; k += 16) __builtin_prefetch(y + i + k, 1, 3);
    m0 = hn::Max(m0, hn::LoadU(d, x + i));
    m1 = hn::Max(m1, hn::LoadU(d, x + i + lanes));
    m2 = hn::Max(m2, hn::LoadU(d, x + i + 2 * lanes));
    m3 = hn::Max(m3, hn::LoadU(d, x + i + 3 * lanes));
  }
  for (; i + lanes <= n; i += lanes) m0 = hn::Max(m0, hn::LoadU(d, x + i));
  float mm = hn::GetLane(hn::MaxOfLanes(d, hn::Max(hn::Max(m0, m1), hn::Max(m2, m3))));
  for (; i < n; ++i) mm = x[i] > mm ? x[i] : mm;
  *m = static_cast<double>(mm);
  *bad = (std::isnan(mm) || mm == inf) ? 1 : 0;
}
void StatsF64(const double* x, size_t n, double* m, int* bad) { StatsTyped(x, n, m, bad); }
void StatsHalf(const uint16_t* x, size_t n, double* m, int* bad, bool bf16) {
  HWY_ALIGN float f[kBlock];
  double mm = -std::numeric_limits<double>::infinity();
  int any = 0;
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t len = n - i < kBlock ? n - i : kBlock;
    WidenBlock(x + i, f, len, bf16);
    double bm;
    int bb;
    StatsTyped(f, len, &bm, &bb);
    any |= bb;
    if (bm > mm) mm = bm;
  }
  *m = mm;
  *bad = any;
}

double SumExpF32(const float* x, size_t n, double m, float* y) { return SumExpTyped(x, n, m, y); }
double SumExpF64(const double* x, size_t n, double m, double* y) { return SumExpTyped(x, n, m, y); }
double SumExpHalf(const uint16_t* x, size_t n, double m, bool bf16) {
  HWY_ALIGN float f[kBlock];
  double sum = 0.0;
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t len = n - i < kBlock ? n - i : kBlock;
    WidenBlock(x + i, f, len, bf16);
    sum += SumExpTyped<float>(f, len, m, f);
  }
  return sum;
}

void FinishF32(const float* x, size_t n, double m, double sum, float* y, bool lg) { FinishTyped(x, n, m, sum, y, lg); }
void FinishF64(const double* x, size_t n, double m, double sum, double* y, bool lg) {
  FinishTyped(x, n, m, sum, y, lg);
}
// f16/bf16 Softmax recomputes the exponentials from x (y cannot hold them at full precision).
void FinishHalf(const uint16_t* x, size_t n, double m, double sum, uint16_t* y, bool lg, bool bf16) {
  const hn::ScalableTag<float> d;
  HWY_ALIGN float f[kBlock];
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t len = n - i < kBlock ? n - i : kBlock;
    WidenBlock(x + i, f, len, bf16);
    if (lg) {
      Map1(d, LogSoftF<float>{static_cast<float>(m), static_cast<float>(std::log(sum))}, f, f, len);
    } else {
      Map1(d, SubExpF<float>{static_cast<float>(m)}, f, f, len);
      Map1(d, ScaleF<float>{static_cast<float>(1.0 / sum)}, f, f, len);
    }
    NarrowBlock(f, y + i, len, bf16);
  }
}

// ---- f32 Softmax / LogSoftmax of one buffer, one pass over memory -------------------------------
// For n < kSoftmaxRowMax (one call per row; the row then stays in L1/L2 for the second pass).
// Pass 1 reads x once, in blocks of kSoftmaxBlockVectors vectors, with a shift c instead of the
// maximum: e = exp(x - c) (kept in an L1 buffer by Softmax rows up to kSoftmaxBufMax) is summed in
// f32 lanes and the block's sum added in f64, while the block's maximum is taken in the same loop. c starts as the maximum of
// the first vector (a value of x, so the sum is >= 1); a block whose maximum exceeds c +
// kSoftmaxShiftSlack is computed again with c = its maximum (the f64 sum is rescaled by
// exp(c_old - c)): so x - c <= kSoftmaxShiftSlack for every kept e, and its rounding costs at most
// kSoftmaxShiftSlack 2^-24 = 4.8e-7 relative error. A pass over x that computes only the maximum
// first would leave the memory idle during the exponentials.
// Pass 2 writes y once, in tight loops (on Zen 5, y stored in pass 1 and read back in pass 2 cost
// about 1 ms more per 64 MiB: those lines had left L1): Softmax scales block j's e by
// exp(c_j - c) / sum (f64; one exp per distinct c_j), or recomputes e from x for longer rows;
// LogSoftmax writes (x - M) - (log(sum) + c - M) with the maximum M.
// Specials: a first vector without a finite maximum goes to the general path (nothing written).
// NaN or +Inf anywhere gives all NaN: d = x - c is NaN for a NaN, and a block with +Inf has the
// maximum +Inf; the d of each block are summed into a NaN detector. -Inf gives e = 0.

// exp(x) for x <= kSoftmaxShiftSlack (see kExp2F32); 0 for x < kSoftmaxExpMin, -Inf and NaN.
template <class D, class V>
HWY_INLINE V ExpSoftmax(D d, V x) {
  const hn::RebindToSigned<D> di;
  const V magic = hn::Set(d, 12582912.0f);  // 1.5 * 2^23: kt holds round(x log2e) in its low bits
  const V log2e = hn::Set(d, 1.44269504088896341f);
  const V kt = hn::MulAdd(x, log2e, magic);
  const V kf = hn::Sub(kt, magic);
  const V f = hn::MulSub(x, log2e, kf);
  const V p = hn::MulAdd(Horner(d, f, kExp2F32), f, hn::Set(d, 1.0f));
  const V e = hn::BitCast(d, hn::Add(hn::BitCast(di, p), hn::ShiftLeft<23>(hn::BitCast(di, kt))));
  return hn::IfThenElseZero(hn::Ge(x, hn::Set(d, kSoftmaxExpMin)), e);
}

// Pass 1 over the full vectors x[b, e), then the tail_n < lanes entries of `tail` (padded with -Inf,
// e = 0) that belong at x + e, with shift c: returns the f64 sum of exp(x - c) (stored to y[b, ...)
// when y is not null), the block's maximum in *bm, and in *nan whether some x - c is NaN.
template <class D>
HWY_INLINE double SoftmaxBlock(D d, const float* x, size_t n, float* y, size_t b, size_t e, const float* tail,
                               size_t tail_n, float c, float* bm, bool* nan) {
  constexpr size_t kAhead = kSoftmaxPrefetchBytes / sizeof(float);
  const bool store = y != nullptr;
  using V = hn::Vec<D>;
  const size_t lanes = hn::Lanes(d);
  const V vc = hn::Set(d, c);
  const V ninf = hn::Set(d, -std::numeric_limits<float>::infinity());
  V a0 = hn::Zero(d), a1 = a0, a2 = a0, a3 = a0;
  V m0 = ninf, m1 = ninf, m2 = ninf, m3 = ninf;
  V s = hn::Zero(d);  // sum of the x - c: NaN iff one is (they are <= c's slack, or -Inf, or NaN)
  size_t i = b;
  for (; i + 4 * lanes <= e; i += 4 * lanes) {
    if (i + kAhead < n) {  // within x only
      for (size_t k = 0; k < 4 * lanes; k += 64 / sizeof(float)) __builtin_prefetch(x + i + kAhead + k, 0, 3);
    }
    const V x0 = hn::LoadU(d, x + i), x1 = hn::LoadU(d, x + i + lanes);
    const V x2 = hn::LoadU(d, x + i + 2 * lanes), x3 = hn::LoadU(d, x + i + 3 * lanes);
    m0 = hn::Max(m0, x0);
    m1 = hn::Max(m1, x1);
    m2 = hn::Max(m2, x2);
    m3 = hn::Max(m3, x3);
    const V d0 = hn::Sub(x0, vc), d1 = hn::Sub(x1, vc), d2 = hn::Sub(x2, vc), d3 = hn::Sub(x3, vc);
    s = hn::Add(s, hn::Add(hn::Add(d0, d1), hn::Add(d2, d3)));
    const V e0 = ExpSoftmax(d, d0), e1 = ExpSoftmax(d, d1), e2 = ExpSoftmax(d, d2), e3 = ExpSoftmax(d, d3);
    if (store) {
      hn::StoreU(e0, d, y + i);
      hn::StoreU(e1, d, y + i + lanes);
      hn::StoreU(e2, d, y + i + 2 * lanes);
      hn::StoreU(e3, d, y + i + 3 * lanes);
    }
    a0 = hn::Add(a0, e0);
    a1 = hn::Add(a1, e1);
    a2 = hn::Add(a2, e2);
    a3 = hn::Add(a3, e3);
  }
  for (; i < e; i += lanes) {  // at most 3 vectors (last block): a1 then holds at most 18 terms
    const V x0 = hn::LoadU(d, x + i);
    m1 = hn::Max(m1, x0);
    const V d0 = hn::Sub(x0, vc);
    s = hn::Add(s, d0);
    const V e0 = ExpSoftmax(d, d0);
    if (store) hn::StoreU(e0, d, y + i);
    a1 = hn::Add(a1, e0);
  }
  if (tail_n != 0) {
    const V x0 = hn::Load(d, tail);
    m2 = hn::Max(m2, x0);
    const V d0 = hn::Sub(x0, vc);
    s = hn::Add(s, d0);
    const V e0 = ExpSoftmax(d, d0);
    a2 = hn::Add(a2, e0);
    if (store) {
      HWY_ALIGN float buf[hn::MaxLanes(d)];
      hn::Store(e0, d, buf);
      for (size_t k = 0; k < tail_n; ++k) y[e + k] = buf[k];
    }
  }
  *bm = hn::GetLane(hn::MaxOfLanes(d, hn::Max(hn::Max(m0, m1), hn::Max(m2, m3))));
  *nan = !hn::AllFalse(d, hn::IsNaN(s));
  const auto sum = PromoteSum(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)));
  return hn::GetLane(hn::SumOfLanes(hn::ScalableTag<double>(), sum));
}

// Returns false, with nothing written, when the first vector has no finite maximum.
template <bool kLogSm>
HWY_INLINE bool SoftmaxRowImpl(const float* x, size_t n, float* y) {  // y == x allowed
  using V = hn::Vec<hn::ScalableTag<float>>;
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  const size_t block = kSoftmaxBlockVectors * lanes;
  const size_t nv = n / lanes * lanes;  // full vectors; the rest goes through `tail`
  const size_t blocks = (n + block - 1) / block;
  const float inf = std::numeric_limits<float>::infinity();
  HWY_ALIGN float tail[hn::MaxLanes(d)];
  for (size_t k = 0; k < lanes; ++k) tail[k] = nv + k < n ? x[nv + k] : -inf;
  float c = hn::GetLane(hn::MaxOfLanes(d, hn::LoadU(d, nv != 0 ? x : tail)));
  if (!std::isfinite(c)) return false;
  // Softmax keeps the exponentials of rows up to kSoftmaxBufMax in an L1 buffer; longer rows
  // compute them again in pass 2 (never through y: it may alias x, which a redone block reads).
  HWY_ALIGN float buf[kLogSm ? 1 : kSoftmaxBufMax];
  float* ebuf = !kLogSm && n <= kSoftmaxBufMax ? buf : nullptr;
  float shift[kSoftmaxRowMax / kSoftmaxBlockVectors];  // c used by each block
  float m = -inf;
  double sum = 0.0;
  bool invalid = false;
  for (size_t j = 0; j < blocks && !invalid; ++j) {
    const size_t b = j * block;
    const size_t e = b + block < nv ? b + block : nv;
    const size_t tail_n = j + 1 == blocks ? n - nv : 0;
    float bm;
    bool nan;
    double part = SoftmaxBlock(d, x, n, ebuf, b, e, tail, tail_n, c, &bm, &nan);
    if (bm > c + kSoftmaxShiftSlack) {  // false for NaN
      if (bm == inf) {
        invalid = true;
        break;
      }
      sum *= std::exp(static_cast<double>(c) - static_cast<double>(bm));
      c = bm;
      part = SoftmaxBlock(d, x, n, ebuf, b, e, tail, tail_n, c, &bm, &nan);
    }
    invalid = nan;
    shift[j] = c;
    sum += part;
    if (bm > m) m = bm;
  }
  if (invalid || std::isnan(sum)) {  // a NaN or +Inf
    for (size_t k = 0; k < n; ++k) y[k] = std::numeric_limits<float>::quiet_NaN();
    return true;
  }
  // Pass 2: tight loops of full-line stores (y is written once and never read back).
  if (kLogSm) {
    const float ls = static_cast<float>(std::log(sum) + (static_cast<double>(c) - static_cast<double>(m)));
    const V vm = hn::Set(d, m), vls = hn::Set(d, ls);
    size_t i = 0;
    for (; i + 4 * lanes <= nv; i += 4 * lanes) {
      const V x0 = hn::LoadU(d, x + i), x1 = hn::LoadU(d, x + i + lanes);
      const V x2 = hn::LoadU(d, x + i + 2 * lanes), x3 = hn::LoadU(d, x + i + 3 * lanes);
      hn::StoreU(hn::Sub(hn::Sub(x0, vm), vls), d, y + i);
      hn::StoreU(hn::Sub(hn::Sub(x1, vm), vls), d, y + i + lanes);
      hn::StoreU(hn::Sub(hn::Sub(x2, vm), vls), d, y + i + 2 * lanes);
      hn::StoreU(hn::Sub(hn::Sub(x3, vm), vls), d, y + i + 3 * lanes);
    }
    for (; i < nv; i += lanes) hn::StoreU(hn::Sub(hn::Sub(hn::LoadU(d, x + i), vm), vls), d, y + i);
    for (; i < n; ++i) y[i] = (x[i] - m) - ls;
    return true;
  }
  const double inv = 1.0 / sum;
  float prev = -inf, g = 0.0f;
  for (size_t j = 0; j < blocks; ++j) {
    if (shift[j] != prev) {
      prev = shift[j];
      g = static_cast<float>(std::exp(static_cast<double>(prev) - static_cast<double>(c)) * inv);
    }
    const V vg = hn::Set(d, g);
    const size_t b = j * block;
    const size_t e = b + block < nv ? b + block : nv;
    size_t i = b;
    if (ebuf != nullptr) {
      for (; i + 4 * lanes <= e; i += 4 * lanes) {
        const V e0 = hn::Load(d, ebuf + i), e1 = hn::Load(d, ebuf + i + lanes);
        const V e2 = hn::Load(d, ebuf + i + 2 * lanes), e3 = hn::Load(d, ebuf + i + 3 * lanes);
        hn::StoreU(hn::Mul(e0, vg), d, y + i);
        hn::StoreU(hn::Mul(e1, vg), d, y + i + lanes);
        hn::StoreU(hn::Mul(e2, vg), d, y + i + 2 * lanes);
        hn::StoreU(hn::Mul(e3, vg), d, y + i + 3 * lanes);
      }
      for (; i < e; i += lanes) hn::StoreU(hn::Mul(hn::Load(d, ebuf + i), vg), d, y + i);
      if (j + 1 == blocks) {
        for (size_t k = nv; k < n; ++k) y[k] = ebuf[k] * g;
      }
    } else {
      const V vc = hn::Set(d, prev);
      for (; i + 2 * lanes <= e; i += 2 * lanes) {
        const V e0 = ExpSoftmax(d, hn::Sub(hn::LoadU(d, x + i), vc));
        const V e1 = ExpSoftmax(d, hn::Sub(hn::LoadU(d, x + i + lanes), vc));
        hn::StoreU(hn::Mul(e0, vg), d, y + i);
        hn::StoreU(hn::Mul(e1, vg), d, y + i + lanes);
      }
      for (; i < e; i += lanes) {
        hn::StoreU(hn::Mul(ExpSoftmax(d, hn::Sub(hn::LoadU(d, x + i), vc)), vg), d, y + i);
      }
      if (j + 1 == blocks && nv < n) {
        HWY_ALIGN float out[hn::MaxLanes(d)];
        hn::Store(hn::Mul(ExpSoftmax(d, hn::Sub(hn::Load(d, tail), vc)), vg), d, out);
        for (size_t k = nv; k < n; ++k) y[k] = out[k - nv];
      }
    }
  }
  return true;
}

bool SoftmaxRowF32(const float* x, size_t n, float* y, bool lg) {
  return lg ? SoftmaxRowImpl<true>(x, n, y) : SoftmaxRowImpl<false>(x, n, y);
}

}  // namespace backplane::cpu::simd::activation_hwy::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>
#include <vector>

#include "backplane/cpu/threads.hpp"
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {
namespace activation_hwy {
HWY_EXPORT(UnaryF32);
HWY_EXPORT(UnaryF64);
HWY_EXPORT(UnaryHalf);
HWY_EXPORT(ParamF32);
HWY_EXPORT(ParamF64);
HWY_EXPORT(ParamHalf);
HWY_EXPORT(PreluF32);
HWY_EXPORT(PreluF64);
HWY_EXPORT(PreluHalf);
HWY_EXPORT(GluF32);
HWY_EXPORT(GluF64);
HWY_EXPORT(GluHalf);
HWY_EXPORT(StatsF32);
HWY_EXPORT(StatsF64);
HWY_EXPORT(StatsHalf);
HWY_EXPORT(SumExpF32);
HWY_EXPORT(SumExpF64);
HWY_EXPORT(SumExpHalf);
HWY_EXPORT(FinishF32);
HWY_EXPORT(FinishF64);
HWY_EXPORT(FinishHalf);
HWY_EXPORT(SoftmaxRowF32);

namespace {

using namespace activation_ops;  // NOLINT

// Work is split into fixed chunks of kGrain elements (boundaries depend only on the size), and only
// from kParallelMin elements on; elementwise results do not depend on the chunking anyway.
constexpr int64_t kGrain = 32768;
constexpr int64_t kParallelMin = 65536;
// Outputs of at least this many bytes (half the L3 of the machines we target) are written with
// non-temporal stores when they do not alias an input: they would not stay in cache anyway.
constexpr size_t kStreamBytes = size_t{16} << 20;

bool Stream(int64_t count, DType dtype, const void* dst, const void* a, const void* b = nullptr) {
  return (dtype == DType::Float32 || dtype == DType::Float64) && dst != a && dst != b &&
         DTypeStorageBytes(dtype, count) >= kStreamBytes;
}

template <class Fn>
void Chunked(int64_t n, int64_t grain, const Fn& fn) {
  if (n < kParallelMin) return fn(int64_t{0}, n);
  ParallelFor(n, grain, [&](int64_t b, int64_t e) { fn(b, e); });
}

bool FloatDType(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
}

bool ValidUnary(void* dst, const void* src, int64_t count, DType dtype) {
  return FloatDType(dtype) && count >= 0 && (count == 0 || (dst != nullptr && src != nullptr));
}

template <class T>
T* At(void* p, int64_t i) {
  return static_cast<T*>(p) + i;
}
template <class T>
const T* At(const void* p, int64_t i) {
  return static_cast<const T*>(p) + i;
}

using UnaryFn = void (*)(void*, const void*, int64_t, DType);
using Param1Fn = void (*)(void*, const void*, int64_t, DType, float);
using Param2Fn = void (*)(void*, const void*, int64_t, DType, float, float);
using GluPackedFn = void (*)(void*, const void*, int64_t, int64_t, DType);
using GluTensorsFn = void (*)(void*, const void*, const void*, int64_t, DType);

template <int kOp>
void Unary(void* dst, const void* src, int64_t count, DType dtype, UnaryFn fallback) {
  if (!ValidUnary(dst, src, count, dtype)) return fallback(dst, src, count, dtype);
  const bool stream = Stream(count, dtype, dst, src);
  Chunked(count, kGrain, [&](int64_t b, int64_t e) {
    const auto n = static_cast<size_t>(e - b);
    switch (dtype) {
      case DType::Float32:
        return HWY_DYNAMIC_DISPATCH(UnaryF32)(kOp, At<float>(src, b), At<float>(dst, b), n, stream);
      case DType::Float64:
        return HWY_DYNAMIC_DISPATCH(UnaryF64)(kOp, At<double>(src, b), At<double>(dst, b), n, stream);
      default:
        return HWY_DYNAMIC_DISPATCH(UnaryHalf)(kOp, At<uint16_t>(src, b), At<uint16_t>(dst, b), n,
                                               dtype == DType::BFloat16);
    }
  });
}

// Parameters as the reference widens them (float -> double is exact; RReLU's slope is computed in
// double and rounded to the compute type inside the kernel, as the reference does).
void Param(int op, double p1, double p2, void* dst, const void* src, int64_t count, DType dtype) {
  const bool stream = Stream(count, dtype, dst, src);
  Chunked(count, kGrain, [&](int64_t b, int64_t e) {
    const auto n = static_cast<size_t>(e - b);
    switch (dtype) {
      case DType::Float32:
        return HWY_DYNAMIC_DISPATCH(ParamF32)(op, p1, p2, At<float>(src, b), At<float>(dst, b), n, stream);
      case DType::Float64:
        return HWY_DYNAMIC_DISPATCH(ParamF64)(op, p1, p2, At<double>(src, b), At<double>(dst, b), n, stream);
      default:
        return HWY_DYNAMIC_DISPATCH(ParamHalf)(op, p1, p2, At<uint16_t>(src, b), At<uint16_t>(dst, b), n,
                                               dtype == DType::BFloat16);
    }
  });
}

bool Finite(float p) { return std::isfinite(p); }

// The reference's parameter rules (docs/semantics/activation.md, Parametric); anything else goes to
// the reference, which throws.
template <int kOp>
void Param1(void* dst, const void* src, int64_t count, DType dtype, float p, Param1Fn fallback) {
  bool ok = ValidUnary(dst, src, count, dtype) && Finite(p);
  if (kOp == kCeluAlpha || kOp == kSnake) ok = ok && p != 0.0f;
  if (kOp == kHardShrink || kOp == kSoftShrink) ok = ok && p >= 0.0f;
  if (!ok) return fallback(dst, src, count, dtype, p);
  Param(kOp, p, p, dst, src, count, dtype);
}

void PReLUV(void* dst, const void* src, const float* slopes, int64_t count, DType dtype, int64_t slopeCount) {
  if (!ValidUnary(dst, src, count, dtype) || slopeCount <= 0 || (count > 0 && slopes == nullptr) ||
      count % slopeCount != 0) {
    return Reference().Activation_PReLUV(dst, src, slopes, count, dtype, slopeCount);
  }
  if (count == 0) return;  // slopes may be null
  const int64_t rows = count / slopeCount;
  const int64_t grain = std::max<int64_t>(1, kGrain / slopeCount);
  const auto period = static_cast<size_t>(slopeCount);
  auto run = [&](int64_t r0, int64_t r1) {
    const int64_t b = r0 * slopeCount;
    const auto n = static_cast<size_t>((r1 - r0) * slopeCount);
    switch (dtype) {
      case DType::Float32:
        return HWY_DYNAMIC_DISPATCH(PreluF32)(At<float>(src, b), At<float>(dst, b), slopes, n, period);
      case DType::Float64:
        return HWY_DYNAMIC_DISPATCH(PreluF64)(At<double>(src, b), At<double>(dst, b), slopes, n, period);
      default:
        return HWY_DYNAMIC_DISPATCH(PreluHalf)(At<uint16_t>(src, b), At<uint16_t>(dst, b), slopes, n, period,
                                               dtype == DType::BFloat16);
    }
  };
  if (count < kParallelMin) return run(0, rows);
  ParallelFor(rows, grain, run);
}

// rows of `half` outputs; gate row r at gate + r * stride, up row r at up + r * stride.
void Glu(int op, const void* gate, const void* up, void* dst, int64_t rows, int64_t half, int64_t stride,
         DType dtype, bool parallel, bool stream = false) {
  auto run = [&](int64_t r0, int64_t r1) {
    const int64_t in = r0 * stride, out = r0 * half;
    const auto nr = static_cast<size_t>(r1 - r0), h = static_cast<size_t>(half), s = static_cast<size_t>(stride);
    switch (dtype) {
      case DType::Float32:
        return HWY_DYNAMIC_DISPATCH(GluF32)(op, At<float>(gate, in), At<float>(up, in), At<float>(dst, out), nr, h,
                                            s, stream);
      case DType::Float64:
        return HWY_DYNAMIC_DISPATCH(GluF64)(op, At<double>(gate, in), At<double>(up, in), At<double>(dst, out), nr,
                                            h, s, stream);
      default:
        return HWY_DYNAMIC_DISPATCH(GluHalf)(op, At<uint16_t>(gate, in), At<uint16_t>(up, in),
                                             At<uint16_t>(dst, out), nr, h, s, dtype == DType::BFloat16);
    }
  };
  if (!parallel || rows * half < kParallelMin) return run(0, rows);
  ParallelFor(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(half, 1)), run);
}

template <int kOp>
void GluPacked(void* dst, const void* packed, int64_t batch, int64_t half, DType dtype, GluPackedFn fallback) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  const bool sizes_ok = batch >= 0 && half >= 0 && half <= kMax / 2 && (half == 0 || batch <= kMax / (2 * half));
  if (!FloatDType(dtype) || !sizes_ok || (batch * half > 0 && (dst == nullptr || packed == nullptr))) {
    return fallback(dst, packed, batch, half, dtype);
  }
  if (batch * half == 0) return;
  // In place (dst inside packed), rows must run in order: row r's output overwrites earlier rows'
  // inputs only.
  const size_t bytes = DTypeStorageBytes(dtype, 1);
  const auto* p = static_cast<const uint8_t*>(packed);
  const auto* q = static_cast<const uint8_t*>(dst);
  const bool overlap = q < p + static_cast<size_t>(batch * 2 * half) * bytes && p < q + static_cast<size_t>(batch * half) * bytes;
  const auto* up = p + static_cast<size_t>(half) * bytes;
  Glu(kOp, packed, up, dst, batch, half, 2 * half, dtype, !overlap);
}

template <int kOp>
void GluTensors(void* dst, const void* gate, const void* up, int64_t count, DType dtype, GluTensorsFn fallback) {
  if (!FloatDType(dtype) || count < 0 || (count > 0 && (dst == nullptr || gate == nullptr || up == nullptr))) {
    return fallback(dst, gate, up, count, dtype);
  }
  if (count == 0) return;
  const bool stream = Stream(count, dtype, dst, gate, up);
  const int64_t rows = count >= kParallelMin ? (count + kGrain - 1) / kGrain : 1;
  if (rows == 1) return Glu(kOp, gate, up, dst, 1, count, count, dtype, false, stream);
  ParallelFor(count, kGrain, [&](int64_t b, int64_t e) {
    const size_t bytes = DTypeStorageBytes(dtype, 1);
    const auto off = static_cast<size_t>(b) * bytes;
    Glu(kOp, static_cast<const uint8_t*>(gate) + off, static_cast<const uint8_t*>(up) + off,
        static_cast<uint8_t*>(dst) + off, 1, e - b, e - b, dtype, false, stream);
  });
}

// Softmax over the whole buffer: max, sum of exp(x - m) in f64 (per-chunk partial sums combined in
// chunk order), then scale or subtract log(sum). NaN or +Inf anywhere, or all -Inf, gives all NaN.
void Softmax(void* dst, const void* src, int64_t count, DType dtype, bool logarithm) {
  if (!ValidUnary(dst, src, count, dtype)) {
    return logarithm ? Reference().Activation_LogSoftmax(dst, src, count, dtype)
                     : Reference().Activation_Softmax(dst, src, count, dtype);
  }
  if (count == 0) return;
  static_assert(kParallelMin <= static_cast<int64_t>(kSoftmaxRowMax));
  if (dtype == DType::Float32 && count < kParallelMin &&  // one thread, one pass over memory
      HWY_DYNAMIC_DISPATCH(SoftmaxRowF32)(At<float>(src, 0), static_cast<size_t>(count), At<float>(dst, 0),
                                          logarithm)) {
    return;
  }
  const bool bf16 = dtype == DType::BFloat16;
  const int64_t grain = count < kParallelMin ? count : kGrain;
  const int64_t chunks = (count + grain - 1) / grain;
  // Per-chunk partial results (inline for up to 64 chunks: no allocation for short rows).
  constexpr int64_t kInline = 64;
  double part_inline[kInline];
  int bad_inline[kInline];
  std::vector<double> part_heap;
  std::vector<int> bad_heap;
  double* part = part_inline;
  int* bad = bad_inline;
  if (chunks > kInline) {
    part_heap.resize(static_cast<size_t>(chunks));
    bad_heap.resize(static_cast<size_t>(chunks));
    part = part_heap.data();
    bad = bad_heap.data();
  }
  auto each = [&](const auto& fn) {
    if (chunks == 1) return fn(int64_t{0}, count);
    ParallelFor(count, grain, fn);
  };
  each([&](int64_t b, int64_t e) {
    const auto c = static_cast<size_t>(b / grain);
    const auto n = static_cast<size_t>(e - b);
    switch (dtype) {
      case DType::Float32:
        return HWY_DYNAMIC_DISPATCH(StatsF32)(At<float>(src, b), n, &part[c], &bad[c],
                                              At<float>(dst, b));
      case DType::Float64: return HWY_DYNAMIC_DISPATCH(StatsF64)(At<double>(src, b), n, &part[c], &bad[c]);
      default: return HWY_DYNAMIC_DISPATCH(StatsHalf)(At<uint16_t>(src, b), n, &part[c], &bad[c], bf16);
    }
  });
  double m = -std::numeric_limits<double>::infinity();
  bool invalid = false;
  for (int64_t c = 0; c < chunks; ++c) {
    invalid = invalid || bad[c] != 0;
    if (part[c] > m) m = part[c];
  }
  const auto all_nan = [&] {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (int64_t i = 0; i < count; ++i) {
      switch (dtype) {
        case DType::Float32: *At<float>(dst, i) = nan; break;
        case DType::Float64: *At<double>(dst, i) = std::numeric_limits<double>::quiet_NaN(); break;
        default: *At<uint16_t>(dst, i) = bf16 ? F32ToBF16(nan) : F32ToF16(nan); break;
      }
    }
  };
  if (invalid || std::isinf(m)) return all_nan();  // NaN / +Inf present, or every entry -Inf
  each([&](int64_t b, int64_t e) {
    const auto c = static_cast<size_t>(b / grain);
    const auto n = static_cast<size_t>(e - b);
    switch (dtype) {
      case DType::Float32:
        part[c] = HWY_DYNAMIC_DISPATCH(SumExpF32)(At<float>(src, b), n, m, logarithm ? nullptr : At<float>(dst, b));
        return;
      case DType::Float64:
        part[c] =
            HWY_DYNAMIC_DISPATCH(SumExpF64)(At<double>(src, b), n, m, logarithm ? nullptr : At<double>(dst, b));
        return;
      default: part[c] = HWY_DYNAMIC_DISPATCH(SumExpHalf)(At<uint16_t>(src, b), n, m, bf16); return;
    }
  });
  double sum = 0.0;
  for (int64_t c = 0; c < chunks; ++c) sum += part[c];
  if (std::isnan(sum)) return all_nan();  // a NaN that the f32 maximum did not see (StatsF32)
  each([&](int64_t b, int64_t e) {
    const auto n = static_cast<size_t>(e - b);
    switch (dtype) {
      case DType::Float32:
        return HWY_DYNAMIC_DISPATCH(FinishF32)(At<float>(src, b), n, m, sum, At<float>(dst, b), logarithm);
      case DType::Float64:
        return HWY_DYNAMIC_DISPATCH(FinishF64)(At<double>(src, b), n, m, sum, At<double>(dst, b), logarithm);
      default:
        return HWY_DYNAMIC_DISPATCH(FinishHalf)(At<uint16_t>(src, b), n, m, sum, At<uint16_t>(dst, b), logarithm,
                                                bf16);
    }
  });
}

// Softmax of each row of [rows, cols]. Rows shorter than kParallelMin are spread over the threads,
// each row one pass over memory in f32 (SoftmaxRowF32; prefetching the next row while one is
// written measured 10-40% slower and was dropped); longer rows go one after another through
// Softmax, which threads each row. dst == src is allowed; any other overlap goes to the reference
// (which works row by row in order).
void SoftmaxRows(void* dst, const void* src, int64_t rows, int64_t cols, DType dtype, bool logarithm) {
  int64_t total = 0;
  const bool shape_ok = FloatDType(dtype) && rows >= 0 && cols >= 0 && !__builtin_mul_overflow(rows, cols, &total) &&
                        total <= std::numeric_limits<int64_t>::max() / 8;
  const bool ok = shape_ok && (total == 0 || (dst != nullptr && src != nullptr));
  const size_t bytes = ok ? DTypeStorageBytes(dtype, total) : 0;
  const auto* s = static_cast<const uint8_t*>(src);
  auto* d = static_cast<uint8_t*>(dst);
  const bool partial_overlap = ok && total > 0 && d != s && d < s + bytes && s < d + bytes;
  if (!ok || partial_overlap) {
    return logarithm ? Reference().MathExt_LogSoftmaxRows(dst, src, rows, cols, dtype)
                     : Reference().MathExt_SoftmaxRows(dst, src, rows, cols, dtype);
  }
  if (total == 0) return;
  const size_t row_bytes = DTypeStorageBytes(dtype, cols);
  auto one_row = [&](int64_t r) {
    const uint8_t* x = s + static_cast<size_t>(r) * row_bytes;
    uint8_t* y = d + static_cast<size_t>(r) * row_bytes;
    if (dtype == DType::Float32 &&
        HWY_DYNAMIC_DISPATCH(SoftmaxRowF32)(reinterpret_cast<const float*>(x), static_cast<size_t>(cols),
                                            reinterpret_cast<float*>(y), logarithm)) {
      return;
    }
    Softmax(y, x, cols, dtype, logarithm);
  };
  if (cols >= kParallelMin) {
    for (int64_t r = 0; r < rows; ++r) Softmax(d + static_cast<size_t>(r) * row_bytes, s + static_cast<size_t>(r) * row_bytes, cols, dtype, logarithm);
    return;
  }
  auto range = [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) one_row(r);
  };
  if (total < kParallelMin) return range(0, rows);
  ParallelFor(rows, std::max<int64_t>(1, kGrain / cols), range);
}

}  // namespace
}  // namespace activation_hwy

void RegisterActivation(KernelTable& t) {
  using namespace activation_ops;  // NOLINT
  namespace k = activation_hwy;
  // Unary (25): aliases share a kernel (Swish = Silu, CELU = ELU, HardGelu = HardSwish).
#define BP_ACT_UNARY(Method, Op)                                   \
  t.Activation_##Method = [](void* d, const void* s, int64_t n, DType dt) { \
    k::Unary<Op>(d, s, n, dt, Reference().Activation_##Method);   \
  };
  BP_ACT_UNARY(Exp, kExp)
  BP_ACT_UNARY(Log, kLog)
  BP_ACT_UNARY(Log1p, kLog1p)
  BP_ACT_UNARY(Expm1, kExpm1)
  BP_ACT_UNARY(Sigmoid, kSigmoid)
  BP_ACT_UNARY(LogSigmoid, kLogSigmoid)
  BP_ACT_UNARY(Tanh, kTanh)
  BP_ACT_UNARY(Silu, kSilu)
  BP_ACT_UNARY(Swish, kSilu)
  BP_ACT_UNARY(GeluTanh, kGeluTanh)
  BP_ACT_UNARY(Gelu, kGelu)
  BP_ACT_UNARY(ReLU, kReLU)
  BP_ACT_UNARY(LeakyReLU, kLeakyReLU)
  BP_ACT_UNARY(ELU, kELU)
  BP_ACT_UNARY(CELU, kELU)
  BP_ACT_UNARY(SELU, kSELU)
  BP_ACT_UNARY(Softplus, kSoftplus)
  BP_ACT_UNARY(Mish, kMish)
  BP_ACT_UNARY(Softsign, kSoftsign)
  BP_ACT_UNARY(HardSigmoid, kHardSigmoid)
  BP_ACT_UNARY(HardSwish, kHardSwish)
  BP_ACT_UNARY(HardTanh, kHardTanh)
  BP_ACT_UNARY(HardGelu, kHardSwish)
  BP_ACT_UNARY(QuickGelu, kQuickGelu)
  BP_ACT_UNARY(TanhShrink, kTanhShrink)
#undef BP_ACT_UNARY

  t.Activation_Softmax = [](void* d, const void* s, int64_t n, DType dt) { k::Softmax(d, s, n, dt, false); };
  t.Activation_LogSoftmax = [](void* d, const void* s, int64_t n, DType dt) { k::Softmax(d, s, n, dt, true); };
  t.MathExt_SoftmaxRows = [](void* d, const void* s, int64_t r, int64_t c, DType dt) {
    k::SoftmaxRows(d, s, r, c, dt, false);
  };
  t.MathExt_LogSoftmaxRows = [](void* d, const void* s, int64_t r, int64_t c, DType dt) {
    k::SoftmaxRows(d, s, r, c, dt, true);
  };

  // Parametric (12).
#define BP_ACT_PARAM1(Method, Op)                                               \
  t.Activation_##Method = [](void* d, const void* s, int64_t n, DType dt, float p) { \
    k::Param1<Op>(d, s, n, dt, p, Reference().Activation_##Method);            \
  };
  BP_ACT_PARAM1(PReLU, kLeaky)
  BP_ACT_PARAM1(LeakyReLUSlope, kLeaky)
  BP_ACT_PARAM1(ELUAlpha, kEluAlpha)
  BP_ACT_PARAM1(CELUAlpha, kCeluAlpha)
  BP_ACT_PARAM1(Threshold, kThreshold)
  BP_ACT_PARAM1(Snake, kSnake)
  BP_ACT_PARAM1(HardShrink, kHardShrink)
  BP_ACT_PARAM1(SoftShrink, kSoftShrink)
#undef BP_ACT_PARAM1

  t.Activation_HardTanhRange = [](void* d, const void* s, int64_t n, DType dt, float lo, float hi) {
    if (!k::ValidUnary(d, s, n, dt) || !k::Finite(lo) || !k::Finite(hi) || lo > hi) {
      return Reference().Activation_HardTanhRange(d, s, n, dt, lo, hi);
    }
    k::Param(kClamp, lo, hi, d, s, n, dt);
  };
  t.Activation_SnakeParametric = [](void* d, const void* s, int64_t n, DType dt, float alpha, float beta) {
    if (!k::ValidUnary(d, s, n, dt) || !k::Finite(alpha) || !k::Finite(beta) || alpha == 0.0f || beta == 0.0f) {
      return Reference().Activation_SnakeParametric(d, s, n, dt, alpha, beta);
    }
    k::Param(kSnake, alpha, beta, d, s, n, dt);
  };
  t.Activation_RReLU = [](void* d, const void* s, int64_t n, DType dt, float lower, float upper) {
    if (!k::ValidUnary(d, s, n, dt) || !k::Finite(lower) || !k::Finite(upper) || lower < 0.0f || lower > upper) {
      return Reference().Activation_RReLU(d, s, n, dt, lower, upper);
    }
    const double slope = (static_cast<double>(lower) + static_cast<double>(upper)) / 2.0;
    k::Param(kLeaky, slope, slope, d, s, n, dt);
  };
  t.Activation_PReLUV = &k::PReLUV;

  // Gated linear units (16): SeGLU is SiGLU.
#define BP_ACT_GLU(Method, Op)                                                                            \
  t.Activation_##Method = [](void* d, const void* p, int64_t b, int64_t h, DType dt) {                     \
    k::GluPacked<Op>(d, p, b, h, dt, Reference().Activation_##Method);                                    \
  };                                                                                                      \
  t.Activation_##Method##Tensors = [](void* d, const void* g, const void* u, int64_t n, DType dt) {        \
    k::GluTensors<Op>(d, g, u, n, dt, Reference().Activation_##Method##Tensors);                          \
  };
  BP_ACT_GLU(GLU, kGlu)
  BP_ACT_GLU(GeGLU, kGeGlu)
  BP_ACT_GLU(GeGLUTanh, kGeGluTanh)
  BP_ACT_GLU(SwiGLU, kSwiGlu)
  BP_ACT_GLU(ReGLU, kReGlu)
  BP_ACT_GLU(SiGLU, kSiGlu)
  BP_ACT_GLU(LinGLU, kLinGlu)
  BP_ACT_GLU(SeGLU, kSiGlu)
#undef BP_ACT_GLU
}

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
