// Conformance runners for the optimizer, embedding and shape families.
//
// Optimizers: several steps with the state carried (fresh grads with specials each step, and a
// run without specials so that norms stay finite), every config flag, one size beyond 64K
// elements (the chunked, threaded path), shifted buffers; params, every state buffer and the
// step counter are compared after every step, and the next step starts from the reference's
// buffers on both sides. Errors must be identical (RunBoth) and leave every buffer untouched.
// Embedding and shape kernels move or sum rows: Lookup and the shape ops compare bytes exactly;
// Bag's f64 sums are compared with the dtype's bound.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "backplane/backend/backend.hpp"
#include "backplane/random.hpp"
#include "conformance/runner.hpp"

namespace backplane::conformance {
namespace {

// ---- Optimizers ---------------------------------------------------------------------------------

// Params, grads and up to three state buffers of one side of a run; all shifted by `off` bytes
// for odd sizes.
struct OptBuffers {
  std::vector<uint8_t> p, s[3];
  int64_t step = 0;
};

// Calls one family kernel with a config chosen by index (the family lambda owns the configs).
// s[i] is null where the config leaves that state unused.
using OptCall = std::function<void(ErasedKernel, int cfg, void* p, const void* g, void* s0, void* s1, void* s2,
                                   int64_t* step, int64_t n, DType dtype)>;

struct OptFamily {
  int configs;
  int states;                 // state buffers the family has
  std::vector<bool> initPos;  // per state: start from |random| (Adagrad's sum) instead of zeros
  OptCall call;
};

Measure RunOptimizer(const OptFamily& f, ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  const DType dt = c.dtype;
  const DType st = dt == DType::Float64 ? DType::Float64 : DType::Float32;
  const Tolerance tol = DefaultTolerance(dt);
  const Tolerance stateTol = DefaultTolerance(st);
  constexpr int kSteps = 3;
  std::vector<std::tuple<int64_t, int, bool>> cases;  // n, config, specials
  for (int64_t n : c.sizes) {
    for (int cfg = 0; cfg < f.configs; ++cfg) {
      for (bool specials : {false, true}) cases.emplace_back(n, cfg, specials);
    }
  }
  for (int cfg = 0; cfg < f.configs; ++cfg) cases.emplace_back(kLarge, cfg, false);
  // clang 14 cannot capture structured bindings in lambdas (P1091): plain references to them.
  for (const auto& [n_binding, cfg_binding, specials_binding] : cases) {
    const auto& n = n_binding;
    const auto& cfg = cfg_binding;
    const auto& specials = specials_binding;
    const size_t off = Offset(dt, n);
    const size_t soff = Offset(st, n);
    const uint64_t seed = c.seed + static_cast<uint64_t>(n) * 131 + static_cast<uint64_t>(cfg);
    OptBuffers side[2];
    for (OptBuffers& b : side) {
      b.p = Shifted(Inputs(c, dt, n, seed, 1.0, specials), off);
      for (int s = 0; s < f.states; ++s) {
        std::vector<uint8_t> init(DTypeStorageBytes(st, n) + 8, 0);
        if (f.initPos[static_cast<size_t>(s)]) {
          init = Inputs(c, st, n, seed + 17 + static_cast<uint64_t>(s), 0.5, false);
          for (int64_t i = 0; i < n; ++i) {  // |x|: clear the sign bit
            const size_t top = static_cast<size_t>(i) * (st == DType::Float64 ? 8 : 4) + (st == DType::Float64 ? 7 : 3);
            init[top] &= 0x7F;
          }
        }
        b.s[s] = Shifted(init, soff);
      }
      b.step = 0;
    }
    const std::string where = fmt::format("n={} config {}{}", n, cfg, specials ? " (specials)" : "");
    for (int t = 0; t < kSteps; ++t) {
      const auto g = Shifted(Inputs(c, dt, n, seed + 1000 + static_cast<uint64_t>(t), 1.0, specials), off);
      auto run = [&](ErasedKernel k, OptBuffers& b) {
        void* s[3] = {nullptr, nullptr, nullptr};
        for (int i = 0; i < f.states; ++i) s[i] = b.s[i].data() + soff;
        f.call(k, cfg, b.p.data() + off, g.data() + off, s[0], s[1], s[2], &b.step, n, dt);
      };
      const std::string at = fmt::format("{} step {}", where, t + 1);
      if (!RunBoth([&] { run(ref, side[0]); }, [&] { run(fast, side[1]); }, at, m)) {
        Fail(m, at + ": threw on a valid call");
        break;
      }
      CompareStorage(Unshifted(side[1].p, off), Unshifted(side[0].p, off), dt, n, tol, at + " params", m);
      for (int s = 0; s < f.states; ++s) {
        CompareStorage(Unshifted(side[1].s[s], soff), Unshifted(side[0].s[s], soff), st, n, stateTol,
                       fmt::format("{} state {}", at, s), m);
      }
      if (side[0].step != side[1].step) Fail(m, fmt::format("{}: step {} != {}", at, side[1].step, side[0].step));
      // The next step starts from the reference's state on both sides, so that a rounding flip in
      // an f16/bf16 param (within the bound) is not amplified by later cancellation.
      side[1] = side[0];
    }
  }
  // Error parity: count < 0, a null state buffer, an unsupported dtype; nothing may be written.
  for (int which = 0; which < 3; ++which) {
    const int64_t n = 33;
    OptBuffers side[2];
    for (OptBuffers& b : side) {
      b.p = Inputs(c, dt, n, c.seed, 1.0, false);
      for (int s = 0; s < f.states; ++s) b.s[s] = std::vector<uint8_t>(DTypeStorageBytes(st, n) + 8, 0);
      b.step = 4;
    }
    const auto g = Inputs(c, dt, n, c.seed + 1, 1.0, false);
    auto run = [&](ErasedKernel k, OptBuffers& b) {
      void* s[3] = {nullptr, nullptr, nullptr};
      for (int i = 0; i < f.states; ++i) s[i] = b.s[i].data();
      if (which == 1 && f.states > 0) s[0] = nullptr;
      const void* grads = (which == 1 && f.states == 0) ? nullptr : g.data();
      f.call(k, std::min(1, f.configs - 1), b.p.data(), grads, s[0], s[1], s[2], &b.step, which == 0 ? -1 : n,
             which == 2 ? DType::Int32 : dt);
    };
    const std::string where = fmt::format("error case {}", which);
    if (RunBoth([&] { run(ref, side[0]); }, [&] { run(fast, side[1]); }, where, m)) {
      Fail(m, where + ": expected an error");
    }
    if (side[0].p != side[1].p || side[0].step != side[1].step) Fail(m, where + ": wrote before throwing");
  }
  return m;
}

// Invalid config values (index -1 in the family lambdas) must throw the same error too.
Measure RunOptimizerFamily(const OptFamily& f, ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m = RunOptimizer(f, ref, fast, c);
  const int64_t n = 9;
  std::vector<uint8_t> p[2] = {Inputs(c, c.dtype, n, c.seed, 1.0, false), Inputs(c, c.dtype, n, c.seed, 1.0, false)};
  const auto g = Inputs(c, c.dtype, n, c.seed + 1, 1.0, false);
  std::vector<uint8_t> s[2][3];
  int64_t step[2] = {0, 0};
  auto run = [&](ErasedKernel k, int side) {
    for (auto& b : s[side]) b.assign(DTypeStorageBytes(DType::Float64, n) + 8, 0);
    f.call(k, -1, p[side].data(), g.data(), s[side][0].data(), s[side][1].data(), s[side][2].data(), &step[side], n,
           c.dtype);
  };
  if (RunBoth([&] { run(ref, 0); }, [&] { run(fast, 1); }, "invalid config", m)) Fail(m, "invalid config: no error");
  if (p[0] != p[1] || step[0] != step[1]) Fail(m, "invalid config: wrote before throwing");
  return m;
}

template <class Cfg>
const Cfg& Pick(const std::vector<Cfg>& cfgs, int i, const Cfg& bad) {
  return i < 0 ? bad : cfgs[static_cast<size_t>(i)];
}

std::vector<AdamConfig> AdamConfigs() {
  AdamConfig a;
  AdamConfig b;
  b.LearningRate = 1e-2f;
  b.Beta1 = 0.8f;
  b.Beta2 = 0.95f;
  b.Eps = 1e-6f;
  b.WeightDecay = 0.1f;
  AdamConfig z;
  z.Eps = 0.0f;
  z.Beta1 = 0.0f;
  return {a, b, z};
}

void RegisterOptimizerRunners(RunnerRegistry& r) {
  static const std::vector<AdamConfig> adam = AdamConfigs();
  static const AdamConfig adamBad = [] {
    AdamConfig c;
    c.Beta2 = 1.0f;
    return c;
  }();
  OptFamily adamFamily{static_cast<int>(adam.size()), 2, {false, false},
                       [](ErasedKernel k, int cfg, void* p, const void* g, void* s0, void* s1, void*, int64_t* step,
                          int64_t n, DType dt) {
                         Unerase<BP_RET_AdamStep (*)(BP_PARAMS_AdamStep)>(k)(Pick(adam, cfg, adamBad), p, g, s0, s1,
                                                                             step, n, dt);
                       }};
  r["AdamStep"] = [adamFamily](ErasedKernel a, ErasedKernel b, const RunContext& c) {
    return RunOptimizerFamily(adamFamily, a, b, c);
  };

  static const std::vector<SGDConfig> sgd = [] {
    SGDConfig a;
    a.LearningRate = 0.1f;
    SGDConfig b;
    b.Momentum = 0.9f;
    b.Dampening = 0.1f;
    b.WeightDecay = 0.01f;
    SGDConfig c;
    c.Momentum = 0.9f;
    c.Nesterov = true;
    c.WeightDecay = 0.05f;
    return std::vector<SGDConfig>{a, b, c};
  }();
  static const SGDConfig sgdBad = [] {
    SGDConfig c;
    c.Nesterov = true;
    return c;
  }();
  OptFamily sgdFamily{3, 1, {false},
                      [](ErasedKernel k, int cfg, void* p, const void* g, void* s0, void*, void*, int64_t* step,
                         int64_t n, DType dt) {
                        Unerase<BP_RET_SGDStep (*)(BP_PARAMS_SGDStep)>(k)(Pick(sgd, cfg, sgdBad), p, g, s0, step, n,
                                                                          dt);
                      }};
  r["SGDStep"] = [sgdFamily](ErasedKernel a, ErasedKernel b, const RunContext& c) {
    return RunOptimizerFamily(sgdFamily, a, b, c);
  };

  static const std::vector<LionConfig> lion = [] {
    LionConfig a;
    LionConfig b;
    b.LearningRate = 1e-3f;
    b.WeightDecay = 0.1f;
    b.Beta1 = 0.5f;
    return std::vector<LionConfig>{a, b};
  }();
  static const LionConfig lionBad = [] {
    LionConfig c;
    c.LearningRate = NAN;
    return c;
  }();
  OptFamily lionFamily{2, 1, {false},
                       [](ErasedKernel k, int cfg, void* p, const void* g, void* s0, void*, void*, int64_t* step,
                          int64_t n, DType dt) {
                         Unerase<BP_RET_LionStep (*)(BP_PARAMS_LionStep)>(k)(Pick(lion, cfg, lionBad), p, g, s0, step,
                                                                             n, dt);
                       }};
  r["LionStep"] = [lionFamily](ErasedKernel a, ErasedKernel b, const RunContext& c) {
    return RunOptimizerFamily(lionFamily, a, b, c);
  };

  static const std::vector<RMSpropConfig> rms = [] {
    RMSpropConfig a;
    RMSpropConfig b;
    b.Alpha = 0.9f;
    b.Centered = true;
    b.Momentum = 0.9f;
    b.WeightDecay = 0.01f;
    RMSpropConfig c;
    c.Momentum = 0.5f;
    RMSpropConfig d;
    d.Alpha = 0.9f;
    d.Centered = true;
    return std::vector<RMSpropConfig>{a, b, c, d};
  }();
  static const RMSpropConfig rmsBad = [] {
    RMSpropConfig c;
    c.Eps = -1.0f;
    return c;
  }();
  OptFamily rmsFamily{4, 3, {false, false, false},
                      [](ErasedKernel k, int cfg, void* p, const void* g, void* s0, void* s1, void* s2, int64_t* step,
                         int64_t n, DType dt) {
                        const RMSpropConfig& c = Pick(rms, cfg, rmsBad);
                        // Unused buffers are passed as null, as the semantics allow.
                        Unerase<BP_RET_RMSpropStep (*)(BP_PARAMS_RMSpropStep)>(k)(
                            c, p, g, s0, c.Centered ? s1 : nullptr, c.Momentum > 0.0f ? s2 : nullptr, step, n, dt);
                      }};
  r["RMSpropStep"] = [rmsFamily](ErasedKernel a, ErasedKernel b, const RunContext& c) {
    return RunOptimizerFamily(rmsFamily, a, b, c);
  };

  static const std::vector<HebbianConfig> hebb = [] {
    HebbianConfig a;
    a.LearningRate = 0.1f;
    HebbianConfig b;
    b.LearningRate = 0.5f;
    b.MaxNorm = 3.0f;  // rescales (sizes > 9 have norm > 3)
    HebbianConfig c;
    c.MaxNorm = 1e30f;  // never rescales
    return std::vector<HebbianConfig>{a, b, c};
  }();
  static const HebbianConfig hebbBad = [] {
    HebbianConfig c;
    c.MaxNorm = INFINITY;
    return c;
  }();
  OptFamily hebbFamily{3, 0, {},
                       [](ErasedKernel k, int cfg, void* p, const void* g, void*, void*, void*, int64_t* step,
                          int64_t n, DType dt) {
                         ++*step;  // the method has no counter; keep the runner's in step
                         Unerase<BP_RET_HebbianStep (*)(BP_PARAMS_HebbianStep)>(k)(Pick(hebb, cfg, hebbBad), p, g, n,
                                                                                   dt);
                       }};
  r["HebbianStep"] = [hebbFamily](ErasedKernel a, ErasedKernel b, const RunContext& c) {
    return RunOptimizerFamily(hebbFamily, a, b, c);
  };

  static const std::vector<LARSConfig> lars = [] {
    LARSConfig a;
    LARSConfig b;
    b.WeightDecay = 0.01f;
    b.Momentum = 0.5f;
    b.Eta = 0.02f;
    return std::vector<LARSConfig>{a, b};
  }();
  static const LARSConfig larsBad = [] {
    LARSConfig c;
    c.Eta = -1.0f;
    return c;
  }();
  OptFamily larsFamily{2, 1, {false},
                       [](ErasedKernel k, int cfg, void* p, const void* g, void* s0, void*, void*, int64_t* step,
                          int64_t n, DType dt) {
                         Unerase<BP_RET_LARSStep (*)(BP_PARAMS_LARSStep)>(k)(Pick(lars, cfg, larsBad), p, g, s0, step,
                                                                             n, dt);
                       }};
  r["LARSStep"] = [larsFamily](ErasedKernel a, ErasedKernel b, const RunContext& c) {
    return RunOptimizerFamily(larsFamily, a, b, c);
  };

  static const std::vector<AdagradConfig> adagrad = [] {
    AdagradConfig a;
    AdagradConfig b;
    b.LrDecay = 0.1f;
    b.WeightDecay = 0.01f;
    b.Eps = 1e-6f;
    return std::vector<AdagradConfig>{a, b};
  }();
  static const AdagradConfig adagradBad = [] {
    AdagradConfig c;
    c.LrDecay = INFINITY;
    return c;
  }();
  OptFamily adagradFamily{2, 1, {true},
                          [](ErasedKernel k, int cfg, void* p, const void* g, void* s0, void*, void*, int64_t* step,
                             int64_t n, DType dt) {
                            Unerase<BP_RET_AdagradStep (*)(BP_PARAMS_AdagradStep)>(k)(Pick(adagrad, cfg, adagradBad),
                                                                                      p, g, s0, step, n, dt);
                          }};
  r["AdagradStep"] = [adagradFamily](ErasedKernel a, ErasedKernel b, const RunContext& c) {
    return RunOptimizerFamily(adagradFamily, a, b, c);
  };

  static const std::vector<AdadeltaConfig> adadelta = [] {
    AdadeltaConfig a;
    AdadeltaConfig b;
    b.LearningRate = 0.5f;
    b.Rho = 0.5f;
    b.WeightDecay = 0.01f;
    return std::vector<AdadeltaConfig>{a, b};
  }();
  static const AdadeltaConfig adadeltaBad = [] {
    AdadeltaConfig c;
    c.Rho = 1.0f;
    return c;
  }();
  OptFamily adadeltaFamily{2, 2, {false, false},
                           [](ErasedKernel k, int cfg, void* p, const void* g, void* s0, void* s1, void*,
                              int64_t* step, int64_t n, DType dt) {
                             Unerase<BP_RET_AdadeltaStep (*)(BP_PARAMS_AdadeltaStep)>(k)(
                                 Pick(adadelta, cfg, adadeltaBad), p, g, s0, s1, step, n, dt);
                           }};
  r["AdadeltaStep"] = [adadeltaFamily](ErasedKernel a, ErasedKernel b, const RunContext& c) {
    return RunOptimizerFamily(adadeltaFamily, a, b, c);
  };
}

// ---- L-BFGS -------------------------------------------------------------------------------------

using LBFGSFn = BP_RET_LBFGSStep (*)(BP_PARAMS_LBFGSStep);

struct LBFGSSide {
  std::vector<uint8_t> p, lastS, prevG, sH, yH;
  std::vector<double> rho;
  int64_t head = 0, stored = 0, step = 0;
  LBFGSState State() {
    return {lastS.data(), prevG.data(), sH.data(), yH.data(), rho.data(), &head, &stored, &step};
  }
};

Measure RunLBFGS(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  const DType dt = c.dtype;
  const DType st = dt == DType::Float64 ? DType::Float64 : DType::Float32;
  const Tolerance tol = DefaultTolerance(dt), stateTol = DefaultTolerance(st);
  const Tolerance rhoTol{1e-10, 1e-10};
  struct Cfg {
    double lr;
    int64_t history;
    bool quadratic;  // grads = c_i p_i (curvature pairs kept); else random grads (pairs mostly skipped)
  };
  const Cfg cfgs[] = {{1.0, 3, true}, {0.5, 1, true}, {0.1, 5, true}, {0.3, 2, false}};
  constexpr int kSteps = 8;
  for (int64_t n : c.sizes) {
    for (const Cfg& k : cfgs) {
      for (bool specials : {false, true}) {
        const uint64_t seed = c.seed + static_cast<uint64_t>(n) * 131 + static_cast<uint64_t>(k.history);
        const LBFGSConfig config{k.lr, k.history};
        LBFGSSide side[2];
        for (LBFGSSide& b : side) {
          b.p = Inputs(c, dt, n, seed, 1.0, specials);
          b.lastS.assign(DTypeStorageBytes(st, n) + 8, 0);
          b.prevG = b.lastS;
          b.sH.assign(DTypeStorageBytes(st, n * k.history) + 8, 0);
          b.yH = b.sH;
          b.rho.assign(static_cast<size_t>(k.history), 0.0);
        }
        const std::string where =
            fmt::format("n={} lr={} history={}{}{}", n, k.lr, k.history, k.quadratic ? "" : " random grads",
                        specials ? " (specials)" : "");
        for (int t = 0; t < kSteps; ++t) {
          std::vector<uint8_t> g(DTypeStorageBytes(dt, n) + 8, 0);
          if (k.quadratic) {
            for (int64_t i = 0; i < n; ++i) StoreAsDouble(g, dt, i, (0.5 + 0.25 * static_cast<double>(i % 7)) * LoadAsDouble(side[0].p, dt, i));
          } else {
            g = Inputs(c, dt, n, seed + 1000 + static_cast<uint64_t>(t), 1.0, specials);
          }
          const std::string at = fmt::format("{} step {}", where, t + 1);
          if (!RunBoth([&] { Unerase<LBFGSFn>(ref)(config, side[0].p.data(), g.data(), side[0].State(), n, dt); },
                       [&] { Unerase<LBFGSFn>(fast)(config, side[1].p.data(), g.data(), side[1].State(), n, dt); },
                       at, m)) {
            Fail(m, at + ": threw on a valid call");
            break;
          }
          const int64_t h = n * k.history;
          CompareStorage(side[1].p, side[0].p, dt, n, tol, at + " params", m);
          CompareStorage(side[1].lastS, side[0].lastS, st, n, stateTol, at + " lastStep", m);
          CompareStorage(side[1].prevG, side[0].prevG, st, n, stateTol, at + " prevGrads", m);
          CompareStorage(side[1].sH, side[0].sH, st, h, stateTol, at + " sHistory", m);
          CompareStorage(side[1].yH, side[0].yH, st, h, stateTol, at + " yHistory", m);
          for (size_t i = 0; i < side[0].rho.size(); ++i) {
            CompareScalar(side[1].rho[i], side[0].rho[i], rhoTol, fmt::format("{} rho[{}]", at, i), m);
          }
          if (side[0].head != side[1].head || side[0].stored != side[1].stored || side[0].step != side[1].step) {
            Fail(m, fmt::format("{}: head/stored/step {}/{}/{}, want {}/{}/{}", at, side[1].head, side[1].stored,
                                side[1].step, side[0].head, side[0].stored, side[0].step));
          }
          side[1] = side[0];  // next step from the reference's state on both sides
        }
      }
    }
  }
  // Errors: count < 0, head out of range, HistorySize 0, null rhoHistory, a bad dtype.
  for (int bad = 0; bad < 5; ++bad) {
    const int64_t n = 9;
    LBFGSSide side[2];
    for (LBFGSSide& b : side) {
      b.p = Inputs(c, dt, n, c.seed, 1.0, false);
      b.lastS.assign(DTypeStorageBytes(st, n) + 8, 0);
      b.prevG = b.lastS;
      b.sH.assign(DTypeStorageBytes(st, 2 * n) + 8, 0);
      b.yH = b.sH;
      b.rho.assign(2, 0.0);
      b.head = bad == 1 ? 2 : 0;
    }
    const auto g = Inputs(c, dt, n, c.seed + 1, 1.0, false);
    const LBFGSConfig config{1.0, bad == 2 ? 0 : 2};
    auto run = [&](ErasedKernel k, LBFGSSide& b) {
      LBFGSState s = b.State();
      if (bad == 3) s.rhoHistory = nullptr;
      Unerase<LBFGSFn>(k)(config, b.p.data(), g.data(), s, bad == 0 ? -1 : n, bad == 4 ? DType::Int8 : dt);
    };
    const std::string where = fmt::format("error case {}", bad);
    if (RunBoth([&] { run(ref, side[0]); }, [&] { run(fast, side[1]); }, where, m)) Fail(m, where + ": expected an error");
    if (side[0].p != side[1].p || side[0].step != side[1].step) Fail(m, where + ": wrote before throwing");
  }
  return m;
}

// ---- Embedding.Bag ------------------------------------------------------------------------------

using BagFn = BP_RET_EmbeddingBag (*)(BP_PARAMS_EmbeddingBag);

uint32_t Bits(uint64_t seed, uint64_t stream, uint64_t i) { return PhiloxBits(seed, stream, i)[0]; }

Measure RunBag(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  const DType dt = c.dtype;
  const Tolerance tol = DefaultTolerance(dt);
  struct Case {
    int64_t vocab, hidden, bags, count;
    int bad;  // 0 valid; 1 index out of range; 2 decreasing offsets; 3 offsets[0] != 0; 4 bad dtype
  };
  std::vector<Case> cases;
  for (int64_t h : c.sizes) cases.push_back({37, h, 7, h > 4097 ? 9 : 50, 0});
  cases.push_back({5, 3, 4, 0, 0});          // every bag empty
  cases.push_back({1000, 64, 4096, 8192, 0});  // threaded
  cases.push_back({1, 1, 1, 1, 0});
  for (int bad = 1; bad <= 4; ++bad) cases.push_back({37, 9, 5, 20, bad});
  for (const Case& k : cases) {
    const uint64_t seed = c.seed + static_cast<uint64_t>(k.hidden * 7 + k.bags);
    const size_t off = Offset(dt, k.hidden);
    const auto table = Shifted(Inputs(c, dt, k.vocab * k.hidden, seed), off);
    std::vector<int32_t> indices(static_cast<size_t>(k.count) + 1), offsets(static_cast<size_t>(k.bags));
    for (int64_t i = 0; i < k.count; ++i) {
      indices[static_cast<size_t>(i)] = static_cast<int32_t>(Bits(seed, 21, static_cast<uint64_t>(i)) % k.vocab);
    }
    // Sorted random cut points, with repeats (empty bags).
    for (int64_t b = 1; b < k.bags; ++b) {
      offsets[static_cast<size_t>(b)] = static_cast<int32_t>(Bits(seed, 22, static_cast<uint64_t>(b)) % (k.count + 1));
    }
    std::sort(offsets.begin(), offsets.end());
    if (k.bad == 1) indices[static_cast<size_t>(k.count / 2)] = static_cast<int32_t>(k.vocab);
    if (k.bad == 2) std::swap(offsets[1], offsets[static_cast<size_t>(k.bags - 1)]), offsets[1] = k.count, offsets[2] = 0;
    if (k.bad == 3) offsets[0] = 1;
    const DType callType = k.bad == 4 ? DType::Int8 : dt;
    std::vector<uint8_t> want(DTypeStorageBytes(dt, k.bags * k.hidden) + off + 8, kGuard), got = want;
    const std::string where = fmt::format("vocab={} hidden={} bags={} count={}{}", k.vocab, k.hidden, k.bags, k.count,
                                          k.bad ? fmt::format(" (error case {})", k.bad) : "");
    const bool ran = RunBoth(
        [&] {
          Unerase<BagFn>(ref)(table.data() + off, indices.data(), offsets.data(), want.data() + off, k.vocab,
                              k.hidden, k.bags, k.count, callType);
        },
        [&] {
          Unerase<BagFn>(fast)(table.data() + off, indices.data(), offsets.data(), got.data() + off, k.vocab,
                               k.hidden, k.bags, k.count, callType);
        },
        where, m);
    if (k.bad) {
      if (ran) Fail(m, where + ": expected an error");
      if (got != want) Fail(m, where + ": wrote before throwing");
      continue;
    }
    if (!ran) continue;
    CompareStorage(Unshifted(got, off), Unshifted(want, off), dt, k.bags * k.hidden, tol, where + " out", m);
  }
  return m;
}

// ---- Shape (exact byte comparison) --------------------------------------------------------------

std::vector<uint8_t> RandomBytes(size_t n, uint64_t seed) {
  std::vector<uint8_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(Bits(seed, 23, i));
  return out;
}

using TransposeFn = BP_RET_Transpose (*)(BP_PARAMS_Transpose);

Measure RunTranspose(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  const DType dt = c.dtype;
  std::vector<std::vector<int64_t>> shapes;
  const int64_t sides[] = {1, 3, 4, 5, 8, 9, 17, 65, 67};
  for (int64_t a : sides) {
    for (int64_t b : sides) shapes.push_back({a, b});
  }
  for (auto s : std::vector<std::vector<int64_t>>{{3, 5, 7}, {1, 9, 4}, {16, 1, 17}, {2, 65, 3}, {33, 8, 5},
                                                 {2, 3, 4, 5}, {5, 1, 3, 1}, {4, 1, 33, 17}, {2, 0, 3},
                                                 {517, 301}, {3, 129, 257}}) {
    shapes.push_back(s);
  }
  shapes.push_back({});                  // rank 0: one element
  shapes.push_back({2, 2, 2, 2, 2, 3});  // rank 6
  for (const auto& shape : shapes) {
    const auto rank = static_cast<int64_t>(shape.size());
    int64_t count = 1;
    for (int64_t d : shape) count *= d;
    std::vector<int64_t> perm(shape.size());
    std::iota(perm.begin(), perm.end(), 0);
    const bool big = count > 100000;
    int perms = 0;
    do {
      if (big && perms > 2) break;  // the big shapes: a few permutations only
      ++perms;
      const size_t off = DTypeStorageBytes(dt, 1) * static_cast<size_t>(perms % 2);
      const size_t bytes = DTypeStorageBytes(dt, count);
      const auto src = RandomBytes(bytes + off, c.seed + static_cast<uint64_t>(count));
      std::vector<uint8_t> want(bytes + off + 16, kGuard), got = want;
      const std::string where = fmt::format("shape [{}] perm [{}]", fmt::join(shape, ","), fmt::join(perm, ","));
      if (!RunBoth([&] { Unerase<TransposeFn>(ref)(src.data() + off, want.data() + off, shape.data(), rank, perm.data(), dt); },
                   [&] { Unerase<TransposeFn>(fast)(src.data() + off, got.data() + off, shape.data(), rank, perm.data(), dt); },
                   where, m)) {
        Fail(m, where + ": threw on a valid call");
        continue;
      }
      CompareBytes(got, want, where, m);
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
  // Errors: a repeated axis, a negative size, overlapping buffers, a bad dtype.
  const std::vector<int64_t> shape = {3, 4};
  for (int bad = 0; bad < 4; ++bad) {
    const std::vector<int64_t> perm = bad == 0 ? std::vector<int64_t>{1, 1} : std::vector<int64_t>{1, 0};
    const std::vector<int64_t> dims = bad == 1 ? std::vector<int64_t>{3, -4} : shape;
    auto src = RandomBytes(DTypeStorageBytes(dt, 12) + 16, c.seed);
    std::vector<uint8_t> want(src.size(), kGuard), got = want;
    auto srcW = src, srcG = src;
    const DType callType = bad == 3 ? DType::Invalid : dt;
    const std::string where = fmt::format("error case {}", bad);
    if (RunBoth(
            [&] {
              Unerase<TransposeFn>(ref)(srcW.data(), bad == 2 ? srcW.data() + 1 : want.data(), dims.data(), 2,
                                        perm.data(), callType);
            },
            [&] {
              Unerase<TransposeFn>(fast)(srcG.data(), bad == 2 ? srcG.data() + 1 : got.data(), dims.data(), 2,
                                         perm.data(), callType);
            },
            where, m)) {
      Fail(m, where + ": expected an error");
    }
    if (got != want || srcW != srcG) Fail(m, where + ": wrote before throwing");
  }
  return m;
}

using UpsampleFn = BP_RET_UpsampleNearest2D (*)(BP_PARAMS_UpsampleNearest2D);

Measure RunUpsample(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  const DType dt = c.dtype;
  struct Case {
    int64_t batch, channels, inH, inW, outH, outW;
    double sh, sw;
    int bad;  // 0 valid; 1 NaN scale; 2 output size not floor(in * scale); 3 inH = 0 with outH > 0
  };
  std::vector<Case> cases;
  for (int64_t in : {1, 3, 4, 5, 7, 8, 17}) {
    for (double s : {2.0, 3.0, 0.5, 1.5, 1.0}) {
      const auto out = static_cast<int64_t>(std::floor(static_cast<double>(in) * s));
      if (out == 0) continue;
      cases.push_back({2, 3, in, in + 2, out, static_cast<int64_t>(std::floor(static_cast<double>(in + 2) * s)), s, s, 0});
    }
    cases.push_back({1, 2, in, 5, 2 * in + 1, 9, 0.0, 0.0, 0});  // sizes given: scale derived
    cases.push_back({1, 1, 5, in, 3, in * 3, -1.0, 3.0, 0});
  }
  cases.push_back({2, 8, 64, 64, 128, 128, 2.0, 2.0, 0});  // threaded
  cases.push_back({0, 3, 4, 4, 8, 8, 2.0, 2.0, 0});        // empty
  cases.push_back({1, 1, 4, 4, 8, 8, NAN, 2.0, 1});
  cases.push_back({1, 1, 4, 4, 9, 8, 2.0, 2.0, 2});
  cases.push_back({1, 1, 0, 4, 3, 8, 0.0, 2.0, 3});
  for (const Case& k : cases) {
    const int64_t inCount = k.batch * k.channels * k.inH * k.inW;
    const int64_t outCount = k.batch * k.channels * k.outH * k.outW;
    const size_t off = DTypeStorageBytes(dt, 1) * static_cast<size_t>(k.inW % 2);
    const auto src = RandomBytes(DTypeStorageBytes(dt, inCount) + off, c.seed + static_cast<uint64_t>(inCount));
    std::vector<uint8_t> want(DTypeStorageBytes(dt, outCount) + off + 16, kGuard), got = want;
    const UpsampleConfig cfg{k.sh, k.sw};
    const std::string where = fmt::format("[{}, {}, {}, {}] -> [{}, {}] scales ({}, {})", k.batch, k.channels, k.inH,
                                          k.inW, k.outH, k.outW, k.sh, k.sw);
    const bool ran = RunBoth(
        [&] {
          Unerase<UpsampleFn>(ref)(cfg, src.data() + off, want.data() + off, k.batch, k.channels, k.inH, k.inW, k.outH,
                                   k.outW, dt);
        },
        [&] {
          Unerase<UpsampleFn>(fast)(cfg, src.data() + off, got.data() + off, k.batch, k.channels, k.inH, k.inW,
                                    k.outH, k.outW, dt);
        },
        where, m);
    if (ran == (k.bad != 0)) Fail(m, where + (k.bad ? ": expected an error" : ": threw on a valid call"));
    CompareBytes(got, want, where, m);
  }
  return m;
}

}  // namespace

void RegisterTrainingRunners(RunnerRegistry& r) {
  RegisterOptimizerRunners(r);
  r["LBFGSStep"] = RunLBFGS;
  r["EmbeddingBag"] = RunBag;
  r["Transpose"] = RunTranspose;
  r["UpsampleNearest2D"] = RunUpsample;
}

}  // namespace backplane::conformance
