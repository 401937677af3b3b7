// Conformance runners for GroupNorm, InstanceNorm, BatchNormEval (and their caller-eps MathExt
// variants), RoPE, RoPEPairs and the masking families (ApplyMask, CausalMask, ALiBiBias).
//
// Every case runs on inputs with specials (+-0, +-Inf, NaN, +-60, 1e-30 at every 97th element) and
// on plain N(0, 2) inputs, in buffers shifted by one element where a dimension is odd (kernels must
// not assume alignment), with guard bytes around the output that must survive. Shapes cover 1,
// lane counts +- 1, odd sizes and (outside the quick matrix) one case over 64 KiB that runs in
// several chunks, where the result must not depend on the thread count. Each runner also checks
// in-place calls and invalid calls (identical errors, output untouched). The comparison is the
// tolerance table element by element; CausalMask must match bit for bit. The eps variants run every
// case with eps 1e-5, then eps 0, 1e-12, 0.25 and the invalid -1, NaN, Inf on fewer shapes.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "backplane/backend/backend.hpp"
#include "backplane/cpu/threads.hpp"
#include "conformance/runner.hpp"

namespace backplane::conformance {
namespace {

using GroupNormFn = BP_RET_GroupNorm (*)(BP_PARAMS_GroupNorm);
using InstanceNormFn = BP_RET_InstanceNorm (*)(BP_PARAMS_InstanceNorm);
using BatchNormEvalFn = BP_RET_BatchNormEval (*)(BP_PARAMS_BatchNormEval);
using GroupNormEpsFn = BP_RET_GroupNormEps (*)(BP_PARAMS_GroupNormEps);
using InstanceNormEpsFn = BP_RET_InstanceNormEps (*)(BP_PARAMS_InstanceNormEps);
using BatchNormEvalEpsFn = BP_RET_BatchNormEvalEps (*)(BP_PARAMS_BatchNormEvalEps);
using RoPEFn = BP_RET_RoPE (*)(BP_PARAMS_RoPE);
using RoPEPairsFn = BP_RET_RoPEPairs (*)(BP_PARAMS_RoPEPairs);
using ApplyMaskFn = BP_RET_ApplyMask (*)(BP_PARAMS_ApplyMask);
using CausalMaskFn = BP_RET_CausalMask (*)(BP_PARAMS_CausalMask);
using ALiBiBiasFn = BP_RET_ALiBiBias (*)(BP_PARAMS_ALiBiBias);

// A buffer whose elements start `off` bytes in (one element when `shift`), followed by 16 guard
// bytes: inputs are copies of `values`, outputs start as guard bytes.
struct Buffer {
  std::vector<uint8_t> bytes;
  size_t off = 0;
  size_t used = 0;
  Buffer(DType dtype, int64_t count, bool shift, const std::vector<uint8_t>* values = nullptr)
      : off(shift ? DTypeStorageBytes(dtype, 1) : 0), used(DTypeStorageBytes(dtype, count)) {
    bytes.assign(off + used + 16, kGuard);
    if (values != nullptr) std::copy(values->begin(), values->begin() + static_cast<std::ptrdiff_t>(used), bytes.begin() + static_cast<std::ptrdiff_t>(off));
  }
  uint8_t* data() { return bytes.data() + off; }
  std::vector<uint8_t> Elements() const {
    return {bytes.begin() + static_cast<std::ptrdiff_t>(off), bytes.begin() + static_cast<std::ptrdiff_t>(off + used)};
  }
};

// Compares the elements of two output buffers and checks got's guard bytes.
void CompareOut(const Buffer& got, const Buffer& want, DType dtype, int64_t count, const std::string& where,
                Measure& m) {
  for (size_t i = 0; i < got.bytes.size(); ++i) {
    if ((i < got.off || i >= got.off + got.used) && got.bytes[i] != kGuard) {
      Fail(m, fmt::format("{}: wrote outside the output", where));
      break;
    }
  }
  CompareStorage(got.Elements(), want.Elements(), dtype, count, DefaultTolerance(dtype), where, m);
}

// Storage of `count` values v[i] -> f(v[i]) (computed in double, stored in dtype).
template <class F>
std::vector<uint8_t> MapStorage(const std::vector<uint8_t>& s, DType dtype, int64_t count, F f) {
  std::vector<uint8_t> out(s.size(), 0);
  for (int64_t i = 0; i < count; ++i) {
    StoreAsDouble(out, dtype, i, f(LoadAsDouble(s, dtype, i), i));
  }
  return out;
}

// Runs `fast` on 1 thread and on the configured pool: the outputs must be identical.
template <class Call>
void ExpectThreadIndependent(const std::string& where, size_t bytes, Call&& call, Measure& m) {
  std::vector<uint8_t> many(bytes), one(bytes);
  call(many.data());
  const int previous = cpu::NumThreads();
  cpu::SetNumThreads(1);
  call(one.data());
  cpu::SetNumThreads(previous);
  if (many != one) Fail(m, fmt::format("{}: the result depends on the thread count", where));
}

// ---- Normalization ------------------------------------------------------------------------------

struct NormShape {
  int64_t batch, channels, spatial, groups;
};

// Batch, groups and channels of 1, one element per block, spatial sizes around 4, 8 and 16 lanes
// (and 2 x 8 f32 lanes), odd sizes; outside the quick matrix a tensor over 64 KiB in several
// chunks.
std::vector<NormShape> NormShapes(const RunContext& c) {
  std::vector<NormShape> s = {{1, 1, 1, 1},    {1, 1, 7, 1},    {2, 4, 3, 2},     {3, 6, 5, 3},
                              {1, 5, 1, 5},    {1, 3, 17, 1},   {2, 8, 15, 4},    {1, 16, 33, 16},
                              {2, 32, 31, 8},  {4, 2, 9, 1},    {1, 4, 8, 2},     {2, 2, 16, 1},
                              {1, 2, 63, 2},   {1, 2, 65, 1},   {3, 3, 100, 3},   {1, 1, 1000, 1}};
  if (!Quick(c)) {
    s.push_back({2, 64, 1025, 32});
    s.push_back({1, 8, 16411, 2});
  }
  return s;
}

// The affine parameters of a case: both, none, scale only.
struct Affine {
  const char* name;
  bool scale, bias;
};
constexpr Affine kAffine[] = {{"affine", true, true}, {"no affine", false, false}, {"scale only", true, false}};

// Inputs: random (specials or plain), plus an offset where `offset` (a large mean against the
// spread, which takes the kernels' f64 path) and a large bias in the plain set.
struct NormInputs {
  std::vector<uint8_t> x, scale, bias;
};

NormInputs MakeNormInputs(DType dtype, const NormShape& s, uint64_t seed, bool specials, double offset) {
  const int64_t count = s.batch * s.channels * s.spatial;
  NormInputs in;
  in.x = MapStorage(RandomStorage(dtype, count, seed, 2.0, specials), dtype, count,
                    [offset](double v, int64_t) { return v + offset; });
  in.scale = RandomStorage(dtype, s.channels, seed + 1, 1.0, specials);
  in.bias = MapStorage(RandomStorage(dtype, s.channels, seed + 2, 1.0, specials), dtype, s.channels,
                       [offset](double v, int64_t i) { return i == 1 && offset != 0.0 ? 40.0 : v; });
  return in;
}

// The caller-eps cases run on these shapes: one element per block (zero variance: NaN with eps 0 in
// both kernels), channels of 1, lane counts +- 1 and a longer plane.
constexpr NormShape kEpsShapes[] = {{1, 1, 1, 1},  {1, 5, 1, 5},   {2, 4, 3, 2},   {2, 8, 15, 4},
                                    {1, 16, 33, 16}, {1, 2, 65, 1}, {3, 3, 100, 3}, {1, 1, 1000, 1}};
constexpr double kEpsValues[] = {0.0, 1e-12, 0.25, -1.0, std::numeric_limits<double>::quiet_NaN(),
                                 std::numeric_limits<double>::infinity()};

// Storage of `count` copies of v: constant blocks, whose variance is exactly 0 in both kernels (the
// sums of a few equal small values are exact in any order).
std::vector<uint8_t> ConstantStorage(DType dtype, int64_t count, double v) {
  return MapStorage(std::vector<uint8_t>(DTypeStorageBytes(dtype, count), 0), dtype, count,
                    [v](double, int64_t) { return v; });
}

// Either both kernels threw the same error and the fast one left `got` as guard bytes, or neither
// threw and the outputs agree.
void CompareOrSameError(const std::string& got_error, const std::string& want_error, const Buffer& got,
                        const Buffer& want, DType dtype, int64_t count, const std::string& where, Measure& m) {
  if (SameErrors(got_error, want_error, where, m)) {
    if (std::any_of(got.bytes.begin(), got.bytes.end(), [](uint8_t b) { return b != kGuard; })) {
      Fail(m, where + ": the fast kernel wrote its output before throwing");
    }
    return;
  }
  if (got_error.empty()) CompareOut(got, want, dtype, count, where, m);
}

// GroupNorm and InstanceNorm: the same cases, groups ignored by InstanceNorm; `with_eps`: the
// MathExt variants, with eps 1e-5 except in the eps cases.
Measure RunBlockNorm(ErasedKernel ref, ErasedKernel fast, const RunContext& c, bool group, bool with_eps) {
  Measure m;
  double eps = 1e-5;
  auto call = [&](ErasedKernel k, int64_t groups, const void* x, const void* scale, const void* bias, void* out,
                  int64_t batch, int64_t channels, int64_t spatial, DType dtype) {
    if (group && with_eps) {
      Unerase<GroupNormEpsFn>(k)(GroupNormConfig{groups}, x, scale, bias, out, batch, channels, spatial, eps,
                                 dtype);
    } else if (group) {
      Unerase<GroupNormFn>(k)(GroupNormConfig{groups}, x, scale, bias, out, batch, channels, spatial, dtype);
    } else if (with_eps) {
      Unerase<InstanceNormEpsFn>(k)(x, scale, bias, out, batch, channels, spatial, eps, dtype);
    } else {
      Unerase<InstanceNormFn>(k)(x, scale, bias, out, batch, channels, spatial, dtype);
    }
  };
  uint64_t seed = c.seed;
  for (const NormShape& s : NormShapes(c)) {
    const int64_t count = s.batch * s.channels * s.spatial;
    const bool shift = s.spatial % 2 == 1;
    for (const InputSet& set : kInputSets) {
      for (const double offset : {0.0, 1000.0}) {
        if (offset != 0.0 && set.specials) continue;
        const NormInputs in = MakeNormInputs(c.dtype, s, ++seed, set.specials, offset);
        Buffer x(c.dtype, count, shift, &in.x);
        for (const Affine& a : kAffine) {
          const std::string where = fmt::format("batch={} channels={} spatial={} groups={} {} offset={} {}", s.batch,
                                                s.channels, s.spatial, s.groups, set.name, offset, a.name);
          const void* scale = a.scale ? in.scale.data() : nullptr;
          const void* bias = a.bias ? in.bias.data() : nullptr;
          Buffer want(c.dtype, count, shift), got(c.dtype, count, shift);
          call(ref, s.groups, x.data(), scale, bias, want.data(), s.batch, s.channels, s.spatial, c.dtype);
          call(fast, s.groups, x.data(), scale, bias, got.data(), s.batch, s.channels, s.spatial, c.dtype);
          CompareOut(got, want, c.dtype, count, where, m);
        }
        if (count > 65536) {
          ExpectThreadIndependent(fmt::format("spatial={}", s.spatial), DTypeStorageBytes(c.dtype, count),
                                  [&](void* out) {
                                    call(fast, s.groups, x.data(), in.scale.data(), in.bias.data(), out, s.batch,
                                         s.channels, s.spatial, c.dtype);
                                  },
                                  m);
        }
      }
    }
  }
  // In place (out == in).
  {
    const NormShape s{2, 6, 37, 3};
    const int64_t count = s.batch * s.channels * s.spatial;
    const NormInputs in = MakeNormInputs(c.dtype, s, ++seed, false, 0.0);
    Buffer want(c.dtype, count, false), inplace(c.dtype, count, false, &in.x);
    call(ref, s.groups, in.x.data(), in.scale.data(), in.bias.data(), want.data(), s.batch, s.channels, s.spatial,
         c.dtype);
    call(fast, s.groups, inplace.data(), in.scale.data(), in.bias.data(), inplace.data(), s.batch, s.channels,
         s.spatial, c.dtype);
    CompareOut(inplace, want, c.dtype, count, "in place", m);
  }
  if (with_eps) {
    // Random inputs (with and without specials) and constant blocks, scale and bias given.
    for (const double e : kEpsValues) {
      eps = e;
      for (const NormShape& s : kEpsShapes) {
        const int64_t count = s.batch * s.channels * s.spatial;
        const bool shift = s.spatial % 2 == 1;
        for (const char* kind : {"specials", "plain", "constant"}) {
          NormInputs in = MakeNormInputs(c.dtype, s, ++seed, kind[0] == 's', 0.0);
          if (kind[0] == 'c') in.x = ConstantStorage(c.dtype, count, 1.5);
          const std::string where = fmt::format("batch={} channels={} spatial={} groups={} {} eps={}", s.batch,
                                                s.channels, s.spatial, s.groups, kind, e);
          Buffer x(c.dtype, count, shift, &in.x), want(c.dtype, count, shift), got(c.dtype, count, shift);
          const std::string want_error = ErrorOf([&] {
            call(ref, s.groups, x.data(), in.scale.data(), in.bias.data(), want.data(), s.batch, s.channels,
                 s.spatial, c.dtype);
          });
          const std::string got_error = ErrorOf([&] {
            call(fast, s.groups, x.data(), in.scale.data(), in.bias.data(), got.data(), s.batch, s.channels,
                 s.spatial, c.dtype);
          });
          CompareOrSameError(got_error, want_error, got, want, c.dtype, count, where, m);
        }
      }
    }
    eps = 1e-5;
  }
  // Invalid calls.
  const auto x = RandomStorage(c.dtype, 24, 1, 2.0, false);
  std::vector<uint8_t> out(128, kGuard);
  auto invalid = [&](int64_t groups, int64_t batch, int64_t channels, int64_t spatial, DType dtype, bool nullIn) {
    return [&, groups, batch, channels, spatial, dtype, nullIn](bool reference) {
      call(reference ? ref : fast, groups, nullIn ? nullptr : x.data(), nullptr, nullptr, out.data(), batch, channels,
           spatial, dtype);
    };
  };
  ExpectSameError("batch=-1", out, invalid(1, -1, 2, 3, c.dtype, false), m);
  ExpectSameError("spatial=-2", out, invalid(1, 2, 2, -2, c.dtype, false), m);
  ExpectSameError("dtype int8", out, invalid(1, 2, 2, 3, DType::Int8, false), m);
  ExpectSameError("dtype int8, size 0", out, invalid(1, 0, 2, 3, DType::Int8, false), m);
  ExpectSameError("null in", out, invalid(1, 2, 2, 3, c.dtype, true), m);
  ExpectSameError("count overflows", out, invalid(1, int64_t{1} << 40, 2, int64_t{1} << 40, c.dtype, false), m);
  if (group) {
    ExpectSameError("Groups=0", out, invalid(0, 2, 4, 3, c.dtype, false), m);
    ExpectSameError("Groups=-2", out, invalid(-2, 2, 4, 3, c.dtype, false), m);
    ExpectSameError("Groups=3 of 4 channels", out, invalid(3, 2, 4, 3, c.dtype, false), m);
    ExpectSameError("Groups=3 of 4 channels, empty batch", out, invalid(3, 0, 4, 3, c.dtype, false), m);
  }
  if (with_eps) {
    // eps is checked after the sizes and pointers, also for an empty tensor.
    for (const double e : {-1e-12, -1.0, std::nan(""), HUGE_VAL, -HUGE_VAL}) {
      eps = e;
      ExpectSameError(fmt::format("eps={}", e), out, invalid(1, 2, 2, 3, c.dtype, false), m);
      ExpectSameError(fmt::format("eps={}, size 0", e), out, invalid(1, 0, 2, 3, c.dtype, false), m);
      ExpectSameError(fmt::format("eps={}, batch=-1", e), out, invalid(1, -1, 2, 3, c.dtype, false), m);
      ExpectSameError(fmt::format("eps={}, null in", e), out, invalid(1, 2, 2, 3, c.dtype, true), m);
    }
    eps = 1e-5;
  }
  return m;
}

Measure RunGroupNorm(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  return RunBlockNorm(ref, fast, c, true, false);
}
Measure RunInstanceNorm(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  return RunBlockNorm(ref, fast, c, false, false);
}
Measure RunGroupNormEps(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  return RunBlockNorm(ref, fast, c, true, true);
}
Measure RunInstanceNormEps(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  return RunBlockNorm(ref, fast, c, false, true);
}

// `with_eps`: MathExt.BatchNormEvalEps, with eps 1e-5 except in the eps cases.
Measure RunBatchNormEvalWith(ErasedKernel ref, ErasedKernel fast, const RunContext& c, bool with_eps) {
  Measure m;
  double eps = 1e-5;
  auto bn = [&](ErasedKernel k, const void* x, const void* scale, const void* bias, const void* mean,
                const void* var, void* out, int64_t batch, int64_t channels, int64_t spatial, DType dtype) {
    if (with_eps) {
      Unerase<BatchNormEvalEpsFn>(k)(x, scale, bias, mean, var, out, batch, channels, spatial, eps, dtype);
    } else {
      Unerase<BatchNormEvalFn>(k)(x, scale, bias, mean, var, out, batch, channels, spatial, dtype);
    }
  };
  uint64_t seed = c.seed;
  for (const NormShape& s : NormShapes(c)) {
    const int64_t count = s.batch * s.channels * s.spatial;
    const bool shift = s.spatial % 2 == 1;
    for (const InputSet& set : kInputSets) {
      for (const double offset : {0.0, 1000.0}) {
        if (offset != 0.0 && set.specials) continue;
        const NormInputs in = MakeNormInputs(c.dtype, s, ++seed, set.specials, offset);
        // Running statistics: mean near the data (with specials: one NaN mean), var = |N(0, 2)|
        // (with specials: one +Inf var, accepted; var 0 where a special zero lands).
        const auto mean = MapStorage(RandomStorage(c.dtype, s.channels, seed + 3, 0.5, false), c.dtype, s.channels,
                                     [&](double v, int64_t i) {
                                       return set.specials && i == 2 ? std::numeric_limits<double>::quiet_NaN()
                                                                     : v + offset;
                                     });
        const auto var = MapStorage(RandomStorage(c.dtype, s.channels, seed + 4, 2.0, false), c.dtype, s.channels,
                                    [&](double v, int64_t i) {
                                      return set.specials && i == 1 ? std::numeric_limits<double>::infinity()
                                                                    : std::fabs(v);
                                    });
        Buffer x(c.dtype, count, shift, &in.x);
        for (const Affine& a : kAffine) {
          const std::string where = fmt::format("batch={} channels={} spatial={} {} offset={} {}", s.batch,
                                                s.channels, s.spatial, set.name, offset, a.name);
          const void* scale = a.scale ? in.scale.data() : nullptr;
          const void* bias = a.bias ? in.bias.data() : nullptr;
          Buffer want(c.dtype, count, shift), got(c.dtype, count, shift);
          bn(ref, x.data(), scale, bias, mean.data(), var.data(), want.data(), s.batch, s.channels, s.spatial,
             c.dtype);
          bn(fast, x.data(), scale, bias, mean.data(), var.data(), got.data(), s.batch, s.channels, s.spatial,
             c.dtype);
          CompareOut(got, want, c.dtype, count, where, m);
        }
        if (count > 65536) {
          ExpectThreadIndependent(fmt::format("spatial={}", s.spatial), DTypeStorageBytes(c.dtype, count),
                                  [&](void* out) {
                                    bn(fast, x.data(), in.scale.data(), in.bias.data(), mean.data(), var.data(), out,
                                       s.batch, s.channels, s.spatial, c.dtype);
                                  },
                                  m);
        }
      }
    }
  }
  if (with_eps) {
    // Running variances |N(0, 2)| (with specials: one +Inf), or with var[0] = 0 (rejected with eps 0)
    // or var[1] = -0.1 (accepted with eps 0.25 only).
    for (const double e : kEpsValues) {
      eps = e;
      for (const NormShape& s : kEpsShapes) {
        const int64_t count = s.batch * s.channels * s.spatial;
        const bool shift = s.spatial % 2 == 1;
        for (const InputSet& set : kInputSets) {
          const NormInputs in = MakeNormInputs(c.dtype, s, ++seed, set.specials, 0.0);
          const auto mean = RandomStorage(c.dtype, s.channels, seed + 3, 0.5, false);
          const auto random = MapStorage(RandomStorage(c.dtype, s.channels, seed + 4, 2.0, false), c.dtype,
                                         s.channels, [&](double v, int64_t i) {
                                           return set.specials && i == 1 ? std::numeric_limits<double>::infinity()
                                                                         : std::fabs(v);
                                         });
          const auto zero = MapStorage(random, c.dtype, s.channels,
                                       [](double v, int64_t i) { return i == 0 ? 0.0 : v; });
          const auto below = MapStorage(random, c.dtype, s.channels,
                                        [](double v, int64_t i) { return i == 1 ? -0.1 : v; });
          for (const auto* var : {&random, &zero, &below}) {
            const std::string where =
                fmt::format("batch={} channels={} spatial={} {} var {} eps={}", s.batch, s.channels, s.spatial,
                            set.name, var == &random ? "random" : var == &zero ? "var[0]=0" : "var[1]=-0.1", e);
            Buffer x(c.dtype, count, shift, &in.x), want(c.dtype, count, shift), got(c.dtype, count, shift);
            const std::string want_error = ErrorOf([&] {
              bn(ref, x.data(), in.scale.data(), in.bias.data(), mean.data(), var->data(), want.data(), s.batch,
                 s.channels, s.spatial, c.dtype);
            });
            const std::string got_error = ErrorOf([&] {
              bn(fast, x.data(), in.scale.data(), in.bias.data(), mean.data(), var->data(), got.data(), s.batch,
                 s.channels, s.spatial, c.dtype);
            });
            CompareOrSameError(got_error, want_error, got, want, c.dtype, count, where, m);
          }
        }
      }
    }
    eps = 1e-5;
  }
  const auto x = RandomStorage(c.dtype, 24, 1, 2.0, false);
  const auto mean = RandomStorage(c.dtype, 4, 2, 1.0, false);
  const auto good = MapStorage(RandomStorage(c.dtype, 4, 3, 1.0, false), c.dtype, 4,
                               [](double v, int64_t) { return std::fabs(v); });
  auto with = [&](int64_t i, double v) {
    return MapStorage(good, c.dtype, 4, [i, v](double w, int64_t j) { return j == i ? v : w; });
  };
  const auto negative = with(2, -0.5), nan = with(1, std::numeric_limits<double>::quiet_NaN()),
             below = with(3, -2e-5);
  // In place (out == in).
  {
    auto inplace = x;
    std::vector<uint8_t> want(x.size(), kGuard);
    bn(ref, x.data(), mean.data(), nullptr, mean.data(), good.data(), want.data(), 2, 4, 3, c.dtype);
    bn(fast, inplace.data(), mean.data(), nullptr, mean.data(), good.data(), inplace.data(), 2, 4, 3, c.dtype);
    CompareStorage(inplace, want, c.dtype, 24, DefaultTolerance(c.dtype), "in place", m);
  }
  std::vector<uint8_t> out(128, kGuard);
  auto invalid = [&](int64_t batch, int64_t spatial, const std::vector<uint8_t>* var, DType dtype, bool nullIn,
                     bool nullMean) {
    return [&, batch, spatial, var, dtype, nullIn, nullMean](bool reference) {
      bn(reference ? ref : fast, nullIn ? nullptr : x.data(), nullptr, nullptr, nullMean ? nullptr : mean.data(),
         var ? var->data() : nullptr, out.data(), batch, 4, spatial, dtype);
    };
  };
  ExpectSameError("batch=-1", out, invalid(-1, 3, &good, c.dtype, false, false), m);
  ExpectSameError("dtype int8", out, invalid(2, 3, &good, DType::Int8, false, false), m);
  ExpectSameError("null in", out, invalid(2, 3, &good, c.dtype, true, false), m);
  ExpectSameError("null mean", out, invalid(2, 3, &good, c.dtype, false, true), m);
  ExpectSameError("null var", out, invalid(2, 3, nullptr, c.dtype, false, false), m);
  ExpectSameError("negative var", out, invalid(2, 3, &negative, c.dtype, false, false), m);
  ExpectSameError("NaN var", out, invalid(2, 3, &nan, c.dtype, false, false), m);
  ExpectSameError("var = -2e-5", out, invalid(2, 3, &below, c.dtype, false, false), m);
  ExpectSameError("negative var, empty batch", out, invalid(0, 3, &negative, c.dtype, false, false), m);
  if (with_eps) {
    // eps is checked after the pointers and before the values of var, also for an empty batch.
    for (const double e : {-1e-12, -1.0, std::nan(""), HUGE_VAL, -HUGE_VAL}) {
      eps = e;
      ExpectSameError(fmt::format("eps={}", e), out, invalid(2, 3, &good, c.dtype, false, false), m);
      ExpectSameError(fmt::format("eps={}, empty batch", e), out, invalid(0, 3, &good, c.dtype, false, false), m);
      ExpectSameError(fmt::format("eps={}, negative var", e), out, invalid(2, 3, &negative, c.dtype, false, false),
                      m);
      ExpectSameError(fmt::format("eps={}, null var", e), out, invalid(2, 3, nullptr, c.dtype, false, false), m);
    }
    eps = 0.0;
    const auto zero = with(0, 0.0);
    ExpectSameError("var[0] = 0, eps=0", out, invalid(2, 3, &zero, c.dtype, false, false), m);
    ExpectSameError("var[0] = 0, eps=0, empty batch", out, invalid(0, 3, &zero, c.dtype, false, false), m);
    eps = 1e-5;
  }
  return m;
}

Measure RunBatchNormEval(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  return RunBatchNormEvalWith(ref, fast, c, false);
}
Measure RunBatchNormEvalEps(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  return RunBatchNormEvalWith(ref, fast, c, true);
}

// ---- RoPE ---------------------------------------------------------------------------------------

struct RoPECase {
  int64_t seq, heads, head_dim;
  double base;
  int64_t start;
};

Measure RunRoPE(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  // Pairs per head around 2, 4, 8 and 16 f64 lanes (head_dim 2 .. 34), typical 64 and 128,
  // angles beyond Highway's Sin/Cos range (39000, start 60000 or base 0.5), a BaseFreq below 1
  // crossing it, large positions, and an empty tensor.
  std::vector<RoPECase> cases = {
      {1, 1, 2, 10000.0, 0},      {0, 3, 4, 10000.0, 0},       {3, 2, 4, 10000.0, 0},
      {5, 3, 6, 10000.0, 7},      {7, 1, 16, 10000.0, 0},      {4, 2, 30, 10000.0, 3},
      {2, 3, 34, 500000.0, 100},  {9, 4, 64, 10000.0, 0},      {3, 2, 128, 10000.0, 4000},
      {5, 3, 18, 10000.0, 60000}, {6, 2, 32, 0.5, 38990},      {3, 5, 10, 1e-3, 2},
      {2, 1, 14, 10000.0, int64_t{1} << 40},                    {17, 1, 8, 2.0, 0}};
  if (!Quick(c)) cases.push_back({70, 8, 128, 10000.0, 0});
  uint64_t seed = c.seed;
  for (const RoPECase& s : cases) {
    const int64_t count = s.seq * s.heads * s.head_dim;
    const bool shift = s.heads % 2 == 1;
    const RoPEConfig config{s.base, s.start};
    for (const InputSet& set : kInputSets) {
      const std::string where = fmt::format("seq={} heads={} headDim={} base={} start={} {}", s.seq, s.heads,
                                            s.head_dim, s.base, s.start, set.name);
      const auto values = RandomStorage(c.dtype, count, ++seed, 2.0, set.specials);
      Buffer x(c.dtype, count, shift, &values), want(c.dtype, count, shift), got(c.dtype, count, shift);
      Unerase<RoPEFn>(ref)(config, x.data(), want.data(), s.seq, s.heads, s.head_dim, c.dtype);
      Unerase<RoPEFn>(fast)(config, x.data(), got.data(), s.seq, s.heads, s.head_dim, c.dtype);
      CompareOut(got, want, c.dtype, count, where, m);
      // In place.
      Buffer inplace(c.dtype, count, shift, &values);
      Unerase<RoPEFn>(fast)(config, inplace.data(), inplace.data(), s.seq, s.heads, s.head_dim, c.dtype);
      CompareOut(inplace, want, c.dtype, count, where + " in place", m);
      if (count > 65536) {
        ExpectThreadIndependent(where, DTypeStorageBytes(c.dtype, count),
                                [&](void* out) {
                                  Unerase<RoPEFn>(fast)(config, x.data(), out, s.seq, s.heads, s.head_dim, c.dtype);
                                },
                                m);
      }
    }
  }
  const auto x = RandomStorage(c.dtype, 24, 1, 2.0, false);
  std::vector<uint8_t> out(128, kGuard);
  auto invalid = [&](RoPEConfig config, int64_t seq, int64_t head_dim, DType dtype, bool nullIn) {
    return [&, config, seq, head_dim, dtype, nullIn](bool reference) {
      Unerase<RoPEFn>(reference ? ref : fast)(config, nullIn ? nullptr : x.data(), out.data(), seq, 2, head_dim,
                                              dtype);
    };
  };
  const RoPEConfig ok{10000.0, 0};
  ExpectSameError("headDim=5", out, invalid(ok, 2, 5, c.dtype, false), m);
  ExpectSameError("headDim=3, seq 0", out, invalid(ok, 0, 3, c.dtype, false), m);
  ExpectSameError("seq=-1", out, invalid(ok, -1, 4, c.dtype, false), m);
  ExpectSameError("dtype int8", out, invalid(ok, 2, 4, DType::Int8, false), m);
  ExpectSameError("null in", out, invalid(ok, 2, 4, c.dtype, true), m);
  ExpectSameError("BaseFreq=0", out, invalid({0.0, 0}, 2, 4, c.dtype, false), m);
  ExpectSameError("BaseFreq=NaN", out, invalid({std::nan(""), 0}, 2, 4, c.dtype, false), m);
  ExpectSameError("BaseFreq=Inf", out, invalid({INFINITY, 0}, 2, 4, c.dtype, false), m);
  ExpectSameError("StartPosition=-1", out, invalid({10000.0, -1}, 2, 4, c.dtype, false), m);
  ExpectSameError("StartPosition+seq overflows", out,
                  invalid({10000.0, std::numeric_limits<int64_t>::max()}, 2, 4, c.dtype, false), m);
  return m;
}

// RoPEPairs over the length-parameterised sizes (halfDim = n): random cos/sin (with specials in
// the specials set), shifted buffers for odd n, and in place.
Measure RunRoPEPairs(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  for (int64_t n : c.sizes) {
    const bool shift = n % 2 == 1;
    for (const InputSet& set : kInputSets) {
      const uint64_t seed = c.seed + static_cast<uint64_t>(n) + (set.specials ? 31 : 0);
      const std::string where = fmt::format("halfDim={} {}", n, set.name);
      const auto values = RandomStorage(c.dtype, 2 * n, seed, 2.0, set.specials);
      const auto cv = RandomStorage(c.dtype, n, seed + 1, 1.0, set.specials);
      const auto sv = RandomStorage(c.dtype, n, seed + 2, 1.0, set.specials);
      Buffer x(c.dtype, 2 * n, shift, &values), cb(c.dtype, n, shift, &cv), sb(c.dtype, n, shift, &sv);
      Buffer want(c.dtype, 2 * n, shift), got(c.dtype, 2 * n, shift);
      Unerase<RoPEPairsFn>(ref)(want.data(), x.data(), cb.data(), sb.data(), n, c.dtype);
      Unerase<RoPEPairsFn>(fast)(got.data(), x.data(), cb.data(), sb.data(), n, c.dtype);
      CompareOut(got, want, c.dtype, 2 * n, where, m);
      Buffer inplace(c.dtype, 2 * n, shift, &values);
      Unerase<RoPEPairsFn>(fast)(inplace.data(), inplace.data(), cb.data(), sb.data(), n, c.dtype);
      CompareOut(inplace, want, c.dtype, 2 * n, where + " in place", m);
    }
  }
  const auto x = RandomStorage(c.dtype, 8, 1, 2.0, false), t = RandomStorage(c.dtype, 4, 2, 1.0, false);
  std::vector<uint8_t> out(64, kGuard);
  auto invalid = [&](int64_t half, DType dtype, bool nullCos) {
    return [&, half, dtype, nullCos](bool reference) {
      Unerase<RoPEPairsFn>(reference ? ref : fast)(out.data(), x.data(), nullCos ? nullptr : t.data(), t.data(), half,
                                                   dtype);
    };
  };
  ExpectSameError("halfDim=-1", out, invalid(-1, c.dtype, false), m);
  ExpectSameError("halfDim too large", out, invalid(std::numeric_limits<int64_t>::max() / 2 + 1, c.dtype, false), m);
  ExpectSameError("dtype int8", out, invalid(4, DType::Int8, false), m);
  ExpectSameError("null cos", out, invalid(4, c.dtype, true), m);
  return m;
}

// ---- Masking ------------------------------------------------------------------------------------

// out = in + mask over the length-parameterised sizes; masks random (with specials: +-Inf, NaN)
// and additive 0 / -Inf; in place on either operand.
Measure RunApplyMask(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  for (int64_t n : c.sizes) {
    const bool shift = n % 2 == 1;
    for (const InputSet& set : kInputSets) {
      const uint64_t seed = c.seed + static_cast<uint64_t>(n) + (set.specials ? 31 : 0);
      const auto a = RandomStorage(c.dtype, n, seed, 2.0, set.specials);
      const auto random = RandomStorage(c.dtype, n, seed + 7919, 2.0, set.specials);
      const auto additive = MapStorage(random, c.dtype, n, [](double v, int64_t) { return v < 0 ? -INFINITY : 0.0; });
      for (const auto* mask : {&random, &additive}) {
        const std::string where = fmt::format("n={} {} {} mask", n, set.name, mask == &random ? "random" : "0/-Inf");
        Buffer x(c.dtype, n, shift, &a), mk(c.dtype, n, shift, mask), want(c.dtype, n, shift), got(c.dtype, n, shift);
        Unerase<ApplyMaskFn>(ref)(x.data(), mk.data(), want.data(), n, c.dtype);
        Unerase<ApplyMaskFn>(fast)(x.data(), mk.data(), got.data(), n, c.dtype);
        CompareOut(got, want, c.dtype, n, where, m);
        Unerase<ApplyMaskFn>(fast)(x.data(), mk.data(), x.data(), n, c.dtype);
        CompareOut(x, want, c.dtype, n, where + " out=in", m);
        Buffer x2(c.dtype, n, shift, &a);
        Unerase<ApplyMaskFn>(fast)(x2.data(), mk.data(), mk.data(), n, c.dtype);
        CompareOut(mk, want, c.dtype, n, where + " out=mask", m);
      }
    }
  }
  const auto x = RandomStorage(c.dtype, 8, 1, 2.0, false);
  std::vector<uint8_t> out(64, kGuard);
  auto invalid = [&](int64_t n, DType dtype, bool nullMask) {
    return [&, n, dtype, nullMask](bool reference) {
      Unerase<ApplyMaskFn>(reference ? ref : fast)(x.data(), nullMask ? nullptr : x.data(), out.data(), n, dtype);
    };
  };
  ExpectSameError("count=-1", out, invalid(-1, c.dtype, false), m);
  ExpectSameError("dtype int8", out, invalid(4, DType::Int8, false), m);
  ExpectSameError("dtype int8, count 0", out, invalid(0, DType::Int8, false), m);
  ExpectSameError("null mask", out, invalid(4, c.dtype, true), m);
  return m;
}

struct MaskShape {
  int64_t seq_q, seq_k;
};

// seqQ <, =, > seqK (rows fully masked when seqQ > seqK), seqQ = 1, rows around 4, 8, 16 and 32
// lanes, empty matrices; outside the quick matrix one over 64 KiB.
std::vector<MaskShape> MaskShapes(const RunContext& c) {
  std::vector<MaskShape> s = {{0, 5},  {5, 0},  {1, 1},   {1, 7},    {1, 17},   {3, 5},   {5, 3},
                              {7, 7},  {8, 9},  {9, 8},   {16, 17},  {17, 16},  {4, 33},  {33, 4},
                              {1, 65}, {3, 63}, {1, 1000}, {1000, 1}, {40, 1100}, {100, 31}};
  if (!Quick(c)) {
    s.push_back({70, 1100});
    s.push_back({300, 250});
  }
  return s;
}

Measure RunCausalMask(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  for (const MaskShape& s : MaskShapes(c)) {
    const int64_t count = s.seq_q * s.seq_k;
    const bool shift = s.seq_k % 2 == 1;
    const std::string where = fmt::format("seqQ={} seqK={}", s.seq_q, s.seq_k);
    Buffer want(c.dtype, count, shift), got(c.dtype, count, shift);
    Unerase<CausalMaskFn>(ref)(want.data(), s.seq_q, s.seq_k, c.dtype);
    Unerase<CausalMaskFn>(fast)(got.data(), s.seq_q, s.seq_k, c.dtype);
    CompareOut(got, want, c.dtype, count, where, m);
    if (got.Elements() != want.Elements()) Fail(m, where + ": not bit-identical");
  }
  std::vector<uint8_t> out(64, kGuard);
  auto invalid = [&](int64_t q, int64_t k, DType dtype, bool nullOut) {
    return [&, q, k, dtype, nullOut](bool reference) {
      Unerase<CausalMaskFn>(reference ? ref : fast)(nullOut ? nullptr : out.data(), q, k, dtype);
    };
  };
  ExpectSameError("seqQ=-1", out, invalid(-1, 3, c.dtype, false), m);
  ExpectSameError("seqQ*seqK overflows", out, invalid(int64_t{1} << 40, int64_t{1} << 40, c.dtype, false), m);
  ExpectSameError("dtype int8", out, invalid(2, 3, DType::Int8, false), m);
  ExpectSameError("null out", out, invalid(2, 3, c.dtype, true), m);
  return m;
}

Measure RunALiBiBias(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  // Slopes 2^-8 (H = 8, head 0), 0.5, 0, -0, 1.5 and 60 (large distances x slope).
  const double kSlopes[] = {0.00390625, 0.5, 0.0, -0.0, 1.5, 60.0};
  uint64_t seed = c.seed;
  size_t which = 0;
  for (const MaskShape& s : MaskShapes(c)) {
    const int64_t count = s.seq_q * s.seq_k;
    const bool shift = s.seq_k % 2 == 1;
    for (const InputSet& set : kInputSets) {
      const double slope_value = kSlopes[which++ % std::size(kSlopes)];
      const auto slope = MapStorage(std::vector<uint8_t>(16, 0), c.dtype, 1,
                                    [slope_value](double, int64_t) { return slope_value; });
      const std::string where =
          fmt::format("seqQ={} seqK={} slope={} {}", s.seq_q, s.seq_k, slope_value, set.name);
      const auto values = RandomStorage(c.dtype, count, ++seed, 2.0, set.specials);
      Buffer x(c.dtype, count, shift, &values), want(c.dtype, count, shift), got(c.dtype, count, shift);
      Unerase<ALiBiBiasFn>(ref)(x.data(), slope.data(), want.data(), s.seq_q, s.seq_k, c.dtype);
      Unerase<ALiBiBiasFn>(fast)(x.data(), slope.data(), got.data(), s.seq_q, s.seq_k, c.dtype);
      CompareOut(got, want, c.dtype, count, where, m);
      Buffer inplace(c.dtype, count, shift, &values);
      Unerase<ALiBiBiasFn>(fast)(inplace.data(), slope.data(), inplace.data(), s.seq_q, s.seq_k, c.dtype);
      CompareOut(inplace, want, c.dtype, count, where + " in place", m);
      if (count > 65536) {
        ExpectThreadIndependent(where, DTypeStorageBytes(c.dtype, count),
                                [&](void* out) {
                                  Unerase<ALiBiBiasFn>(fast)(x.data(), slope.data(), out, s.seq_q, s.seq_k, c.dtype);
                                },
                                m);
      }
    }
  }
  const auto x = RandomStorage(c.dtype, 12, 1, 2.0, false);
  auto slope = [&](double v) {
    return MapStorage(std::vector<uint8_t>(16, 0), c.dtype, 1, [v](double, int64_t) { return v; });
  };
  const auto good = slope(0.5), negative = slope(-0.5), nan = slope(std::nan("")), inf = slope(INFINITY);
  std::vector<uint8_t> out(64, kGuard);
  auto invalid = [&](int64_t q, const std::vector<uint8_t>* sl, DType dtype) {
    return [&, q, sl, dtype](bool reference) {
      Unerase<ALiBiBiasFn>(reference ? ref : fast)(x.data(), sl ? sl->data() : nullptr, out.data(), q, 4, dtype);
    };
  };
  ExpectSameError("seqQ=-1", out, invalid(-1, &good, c.dtype), m);
  ExpectSameError("dtype int8", out, invalid(3, &good, DType::Int8), m);
  ExpectSameError("null slope", out, invalid(3, nullptr, c.dtype), m);
  ExpectSameError("slope=-0.5", out, invalid(3, &negative, c.dtype), m);
  ExpectSameError("slope=NaN", out, invalid(3, &nan, c.dtype), m);
  ExpectSameError("slope=Inf", out, invalid(3, &inf, c.dtype), m);
  return m;
}

}  // namespace

void RegisterNormRunners(RunnerRegistry& r) {
  r["GroupNorm"] = RunGroupNorm;
  r["InstanceNorm"] = RunInstanceNorm;
  r["BatchNormEval"] = RunBatchNormEval;
  r["GroupNormEps"] = RunGroupNormEps;
  r["InstanceNormEps"] = RunInstanceNormEps;
  r["BatchNormEvalEps"] = RunBatchNormEvalEps;
  r["RoPE"] = RunRoPE;
  r["RoPEPairs"] = RunRoPEPairs;
  r["ApplyMask"] = RunApplyMask;
  r["CausalMask"] = RunCausalMask;
  r["ALiBiBias"] = RunALiBiBias;
}

}  // namespace backplane::conformance
