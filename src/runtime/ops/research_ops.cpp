// Graph-level lowerings of the research domains: hawkes, vsa, active_inference, predictive_coding,
// markov_blanket, causal, physics and pospop.
//
// Shapes: a kernel that takes a count reads a 1-D vector, except that the elementwise ones
// broadcast by NumPy's rules and vsa.permute, hawkes.intensity's queries and pospop's words take
// any shape (read flat). A kernel that takes dimensions reads a matrix or table whose shape gives
// them, e.g. P(Y | X, Z) is [X, Z, Y]; causal.cholesky batches over leading dimensions. A kernel
// that writes one value gives a shape [] output. Node ids and labels are int32.
// hawkes.simulate: no inputs; outputs times f32 [max_events] (max_events must be > 0 so that the
// shape is known), padded with -1 after the events, and count int64 [1].
// pospop.count*: counts int64 [W] start from zero on every run (the kernels accumulate; the graph
// op does not).
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <string_view>

#include "runtime/ops/lowering.hpp"
#include "runtime/ops/ops.hpp"

namespace backplane::runtime::ops {
namespace {

using Types = std::vector<TensorType>;

// ---- shared checks ---------------------------------------------------------------------------------
// Every listed input is present and has the floating dtype of the first; returns it.
DType FloatInputs(const Attrs& attrs, std::span<const TensorType> in, std::initializer_list<size_t> indices) {
  for (size_t i : indices) ExpectDType(attrs, in, i, kFloatDTypes);
  ExpectSameDType(attrs, in, indices);
  return in[*indices.begin()].dtype;
}

// Every listed input is 1-D with the length of the first; returns the length.
int64_t Vectors(const Attrs& attrs, std::span<const TensorType> in, std::initializer_list<size_t> indices) {
  for (size_t i : indices) ExpectRank(attrs, in, i, 1);
  for (size_t i : indices) ExpectShape(attrs, in, i, in[*indices.begin()].shape);
  return in[*indices.begin()].shape[0];
}

// Input `index` is a square matrix [N, N]; returns N.
int64_t SquareMatrix(const Attrs& attrs, std::span<const TensorType> in, size_t index) {
  ExpectRank(attrs, in, index, 2);
  const Shape& s = in[index].shape;
  if (s[0] != s[1]) {
    Fail(attrs, ErrorCode::ShapeMismatch,
         fmt::format("input {} must be a square matrix [N, N], got {}", index, ShapeToString(s)));
  }
  return s[0];
}

// Input `index` is 1-D int32 (node ids or labels).
void IdVector(const Attrs& attrs, std::span<const TensorType> in, size_t index) {
  ExpectDType(attrs, in, index, DTypeSet{DType::Int32});
  ExpectRank(attrs, in, index, 1);
}

enum class Bound { Any, NonNegative, Positive };

// Float attribute `name` as the f32 the kernels take: finite in f32 and within `bound`.
float FloatAttr(const Attrs& attrs, const std::string& name, Bound bound = Bound::Any) {
  const double value = attrs.Float(name);
  const float f = static_cast<float>(value);
  const bool ok = std::isfinite(f) && (bound == Bound::Any || f > 0 || (bound == Bound::NonNegative && f == 0));
  if (!ok) {
    const char* expected = bound == Bound::Any           ? "finite in f32"
                           : bound == Bound::NonNegative ? "finite and >= 0"
                                                         : "finite and > 0";
    attrs.Fail(name, expected, fmt::format("{}", value));
  }
  return f;
}

float Spacing(const Attrs& attrs) { return FloatAttr(attrs, "spacing", Bound::Positive); }

// ---- elementwise kernels of the research surfaces: output[i] = f(left[i], right[i]) --------------
template <class Surface>
OpImpl Pointwise(Surface& (Backend::*surface)(), void (Surface::*method)(BP_PARAMS_BinaryOut)) {
  return BinaryOpImpl([surface, method](Backend& b, void* dst, const void* l, const void* r, int64_t n, DType d) {
    ((b.*surface)().*method)(l, r, dst, n, d);
  });
}

// ---- hawkes ----------------------------------------------------------------------------------------
// events [E] ascending, queries of any shape -> intensity with the queries' shape.
OpImpl HawkesIntensity() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        const DType d = FloatInputs(attrs, in, {0, 1});
        ExpectRank(attrs, in, 0, 1);
        FloatAttr(attrs, "mu", Bound::NonNegative);
        FloatAttr(attrs, "alpha", Bound::NonNegative);
        FloatAttr(attrs, "beta", Bound::Positive);
        return Types{{d, in[1].shape}};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const Attrs& a = ctx.attrs;
        ctx.backend.Hawkes().HawkesIntensity(in[0].data(), in[1].data(), out[0].data(), in[0].numel(),
                                             in[1].numel(), FloatAttr(a, "mu"), FloatAttr(a, "alpha"),
                                             FloatAttr(a, "beta"), in[0].dtype());
      }};
}

// events [E] -> K [E, E].
OpImpl HawkesKernelMatrix() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        const DType d = FloatInputs(attrs, in, {0});
        const int64_t e = Vectors(attrs, in, {0});
        FloatAttr(attrs, "alpha", Bound::NonNegative);
        FloatAttr(attrs, "beta", Bound::Positive);
        return Types{{d, {e, e}}};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        ctx.backend.Hawkes().HawkesKernelMatrix(in[0].data(), out[0].data(), in[0].numel(),
                                                FloatAttr(ctx.attrs, "alpha"), FloatAttr(ctx.attrs, "beta"),
                                                in[0].dtype());
      }};
}

// events [E] -> log-likelihood [].
OpImpl HawkesLogLikelihood() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        const DType d = FloatInputs(attrs, in, {0});
        Vectors(attrs, in, {0});
        FloatAttr(attrs, "total_time", Bound::NonNegative);
        FloatAttr(attrs, "mu", Bound::Positive);
        FloatAttr(attrs, "alpha", Bound::NonNegative);
        FloatAttr(attrs, "beta", Bound::Positive);
        return Types{{d, {}}};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const Attrs& a = ctx.attrs;
        ctx.backend.Hawkes().HawkesLogLikelihood(in[0].data(), in[0].numel(), FloatAttr(a, "total_time"),
                                                 FloatAttr(a, "mu"), FloatAttr(a, "alpha"), FloatAttr(a, "beta"),
                                                 out[0].data(), in[0].dtype());
      }};
}

// No inputs -> times f32 [max_events] padded with -1, count int64 [1]. The seed is used as its
// 64-bit two's-complement pattern.
OpImpl HawkesSimulate() {
  return OpImpl{
      [](std::span<const TensorType>, const Attrs& attrs) {
        const int64_t capacity = attrs.Int("max_events");
        if (capacity <= 0) attrs.Fail("max_events", "> 0 (the length of the times output)", std::to_string(capacity));
        FloatAttr(attrs, "mu", Bound::Positive);
        FloatAttr(attrs, "alpha", Bound::NonNegative);
        FloatAttr(attrs, "beta", Bound::Positive);
        FloatAttr(attrs, "horizon", Bound::NonNegative);
        return Types{{DType::Float32, {capacity}}, {DType::Int64, {1}}};
      },
      [](OpContext& ctx, std::span<const Tensor>, std::span<Tensor> out) {
        const Attrs& a = ctx.attrs;
        const int64_t capacity = a.Int("max_events");
        const HawkesSimulateConfig config{FloatAttr(a, "mu"), FloatAttr(a, "alpha"), FloatAttr(a, "beta"),
                                          FloatAttr(a, "horizon"), capacity, static_cast<uint64_t>(a.Int("seed"))};
        int64_t count = 0;
        ctx.backend.PointProcess().HawkesSimulate(config, out[0].data(), capacity, &count, DType::Float32);
        for (int64_t i = count; i < capacity; ++i) out[0].SetDouble(i, -1.0);
        if (out.size() > 1) out[1].data_as<int64_t>()[0] = count;
      }};
}

// ---- vsa -------------------------------------------------------------------------------------------
// numpy.roll(a, k) (or -k) of the flattened tensor, any shape.
OpImpl VSAPermute(void (VSASurface::*method)(BP_PARAMS_VSAPermute)) {
  return OpImpl{[](std::span<const TensorType> in, const Attrs& attrs) {
                  return SameAsInput0(in, attrs, kFloatDTypes);
                },
                [method](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
                  const VSAConfig config{ctx.attrs.Int("k")};
                  (ctx.backend.VSA().*method)(config, in[0].data(), out[0].data(), in[0].numel(), in[0].dtype());
                }};
}

// a [n], b [n] -> cosine similarity [].
OpImpl VSASimilarity() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        const DType d = FloatInputs(attrs, in, {0, 1});
        Vectors(attrs, in, {0, 1});
        return Types{{d, {}}};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        out[0].SetDouble(0, ctx.backend.VSA().Similarity(in[0].data(), in[1].data(), in[0].numel(), in[0].dtype()));
      }};
}

// ---- active_inference ------------------------------------------------------------------------------
// likelihood [n], prior [n] -> posterior [n].
OpImpl BeliefUpdate() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        FloatInputs(attrs, in, {0, 1});
        Vectors(attrs, in, {0, 1});
        return Types{in[0]};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        ctx.backend.ActiveInference().BeliefUpdate(in[0].data(), in[1].data(), out[0].data(), in[0].numel(),
                                                   in[0].dtype());
      }};
}

// likelihood, posterior, prior [n] -> F [].
OpImpl FreeEnergy() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        const DType d = FloatInputs(attrs, in, {0, 1, 2});
        Vectors(attrs, in, {0, 1, 2});
        return Types{{d, {}}};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        ctx.backend.ActiveInference().FreeEnergy(in[0].data(), in[1].data(), in[2].data(), out[0].data(),
                                                 in[0].numel(), in[0].dtype());
      }};
}

// predicted_obs [O], preferred_obs [O], predicted_state [S] -> G [].
OpImpl ExpectedFreeEnergy() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        const DType d = FloatInputs(attrs, in, {0, 1, 2});
        Vectors(attrs, in, {0, 1});
        Vectors(attrs, in, {2});
        return Types{{d, {}}};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        ctx.backend.ActiveInference().ExpectedFreeEnergy(in[0].data(), in[1].data(), in[2].data(), out[0].data(),
                                                         in[0].numel(), in[2].numel(), in[0].dtype());
      }};
}

// ---- predictive_coding -----------------------------------------------------------------------------
// weights W [O, I] and representation s [I] (and error e [O] when `with_error`).
void CheckLayer(const Attrs& attrs, std::span<const TensorType> in, bool with_error) {
  if (with_error) {
    FloatInputs(attrs, in, {0, 1, 2});
  } else {
    FloatInputs(attrs, in, {0, 1});
  }
  ExpectRank(attrs, in, 0, 2);
  ExpectShape(attrs, in, 1, {in[0].shape[1]});
  if (with_error) ExpectShape(attrs, in, 2, {in[0].shape[0]});
}

// W [O, I], s [I] -> W s [O].
OpImpl Prediction() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        CheckLayer(attrs, in, false);
        return Types{{in[0].dtype, {in[0].shape[0]}}};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        ctx.backend.PredictiveCoding().Prediction(in[0].data(), in[1].data(), out[0].data(), in[0].shape()[0],
                                                  in[0].shape()[1], in[0].dtype());
      }};
}

// W [O, I], s [I], e [O] -> s' [I] (update_representation) or W' [O, I] (update_weights).
OpImpl PredictiveUpdate(void (PredictiveCodingSurface::*method)(BP_PARAMS_PredictiveUpdate), bool weights) {
  return OpImpl{
      [weights](std::span<const TensorType> in, const Attrs& attrs) {
        CheckLayer(attrs, in, true);
        FloatAttr(attrs, "learning_rate");
        return Types{weights ? in[0] : in[1]};
      },
      [method](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const PredictiveCodingConfig config{FloatAttr(ctx.attrs, "learning_rate")};
        (ctx.backend.PredictiveCoding().*method)(config, in[0].data(), in[1].data(), in[2].data(), out[0].data(),
                                                  in[0].shape()[0], in[0].shape()[1], in[0].dtype());
      }};
}

// ---- markov_blanket --------------------------------------------------------------------------------
// mutual_information [N, N], partition int32 [N] -> flow [N].
OpImpl MarkovFlow(void (CausalSurface::*method)(BP_PARAMS_MarkovFlow)) {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        const DType d = FloatInputs(attrs, in, {0});
        const int64_t n = SquareMatrix(attrs, in, 0);
        IdVector(attrs, in, 1);
        ExpectShape(attrs, in, 1, {n});
        return Types{{d, {n}}};
      },
      [method](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        (ctx.backend.Causal().*method)(in[0].data(), in[1].data_as<int32_t>(), out[0].data(), in[1].numel(),
                                       in[0].dtype());
      }};
}

// joint [X, Y] -> I(X; Y) [].
OpImpl MutualInformation() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        const DType d = FloatInputs(attrs, in, {0});
        ExpectRank(attrs, in, 0, 2);
        return Types{{d, {}}};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        ctx.backend.Hawkes().MarkovMutualInformation(in[0].data(), out[0].data(), in[0].shape()[0],
                                                     in[0].shape()[1], in[0].dtype());
      }};
}

// adjacency [N, N], internal int32 [K] -> labels int32 [N].
OpImpl BlanketPartition() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        FloatInputs(attrs, in, {0});
        const int64_t n = SquareMatrix(attrs, in, 0);
        IdVector(attrs, in, 1);
        return Types{{DType::Int32, {n}}};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        ctx.backend.Hawkes().MarkovBlanketPartition(in[0].data(), in[1].data_as<int32_t>(), out[0].data_as<int32_t>(),
                                                    in[0].shape()[0], in[1].numel(), in[0].dtype());
      }};
}

// ---- causal ----------------------------------------------------------------------------------------
// conditional P(y | x, z) [X, Z, Y], marginal_z [Z] -> P(y | do(x)) [X, Y].
OpImpl Backdoor() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        const DType d = FloatInputs(attrs, in, {0, 1});
        ExpectRank(attrs, in, 0, 3);
        const Shape& c = in[0].shape;
        ExpectShape(attrs, in, 1, {c[1]});
        return Types{{d, {c[0], c[2]}}};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const Shape& c = in[0].shape();
        ctx.backend.Causal().BackdoorAdjustment(in[0].data(), in[1].data(), out[0].data(), c[0], c[1], c[2],
                                                in[0].dtype());
      }};
}

// mediator_given_x [X, M], outcome_given_xm [X, M, Y], marginal_x [X] -> P(y | do(x)) [X, Y].
OpImpl Frontdoor() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        const DType d = FloatInputs(attrs, in, {0, 1, 2});
        ExpectRank(attrs, in, 0, 2);
        ExpectRank(attrs, in, 1, 3);
        const Shape& m = in[0].shape;
        const int64_t y = in[1].shape[2];
        ExpectShape(attrs, in, 1, {m[0], m[1], y});
        ExpectShape(attrs, in, 2, {m[0]});
        return Types{{d, {m[0], y}}};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const Shape& o = in[1].shape();
        ctx.backend.Causal().FrontdoorAdjustment(in[0].data(), in[1].data(), in[2].data(), out[0].data(), o[0], o[1],
                                                 o[2], in[0].dtype());
      }};
}

// adjacency [N, N], intervened int32 [K] -> mutilated adjacency [N, N].
OpImpl DoIntervene() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        FloatInputs(attrs, in, {0});
        SquareMatrix(attrs, in, 0);
        IdVector(attrs, in, 1);
        return Types{in[0]};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        ctx.backend.Causal().DoIntervene(in[0].data(), in[1].data_as<int32_t>(), out[0].data(), in[0].shape()[0],
                                         in[1].numel(), in[0].dtype());
      }};
}

// y, x, x_cf (broadcast together) -> y + slope (x_cf - x).
OpImpl Counterfactual() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        const DType d = FloatInputs(attrs, in, {0, 1, 2});
        FloatAttr(attrs, "slope");
        return Types{{d, BroadcastShapes(attrs, BroadcastShapes(attrs, in[0].shape, in[1].shape), in[2].shape)}};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const Shape& shape = out[0].shape();
        const Tensor y = Expand(in[0], shape);
        const Tensor x = Expand(in[1], shape);
        const Tensor x_cf = Expand(in[2], shape);
        ctx.backend.Causal().Counterfactual(y.data(), x.data(), x_cf.data(), out[0].data(), out[0].numel(),
                                            FloatAttr(ctx.attrs, "slope"), out[0].dtype());
      }};
}

// instrument, treatment, outcome [n >= 2] -> Cov(Z, Y) / Cov(Z, X) [].
OpImpl IVEstimate() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        const DType d = FloatInputs(attrs, in, {0, 1, 2});
        if (Vectors(attrs, in, {0, 1, 2}) < 2) {
          Fail(attrs, ErrorCode::ShapeMismatch, fmt::format("needs at least 2 samples, got {}", in[0].shape[0]));
        }
        return Types{{d, {}}};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        ctx.backend.Causal().IVEstimate(in[0].data(), in[1].data(), in[2].data(), in[0].numel(), out[0].data(),
                                        in[0].dtype());
      }};
}

// conditionals [C] -> their product [].
OpImpl DAGFactorization() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        const DType d = FloatInputs(attrs, in, {0});
        Vectors(attrs, in, {0});
        return Types{{d, {}}};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        ctx.backend.Causal().DAGMarkovFactorization(in[0].data(), in[0].numel(), out[0].data(), in[0].dtype());
      }};
}

// a [..., N, N] -> lower Cholesky factor of each matrix.
OpImpl Cholesky() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        FloatInputs(attrs, in, {0});
        ExpectMinRank(attrs, in, 0, 2);
        const Shape& s = in[0].shape;
        if (s[s.size() - 1] != s[s.size() - 2]) {
          Fail(attrs, ErrorCode::ShapeMismatch,
               fmt::format("input 0 must be square matrices [..., N, N], got {}", ShapeToString(s)));
        }
        return Types{in[0]};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const int64_t n = in[0].shape().back();
        const size_t bytes = DTypeStorageBytes(in[0].dtype(), n * n);
        const int64_t batch = n == 0 ? 0 : in[0].numel() / (n * n);
        for (int64_t b = 0; b < batch; ++b) {
          ctx.backend.Causal().Cholesky(static_cast<const char*>(in[0].data()) + static_cast<size_t>(b) * bytes,
                                        static_cast<char*>(out[0].data()) + static_cast<size_t>(b) * bytes, n,
                                        in[0].dtype());
        }
      }};
}

// ---- physics ---------------------------------------------------------------------------------------
// u of rank 1-3 -> periodic Laplacian of the same shape.
OpImpl Laplacian() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        FloatInputs(attrs, in, {0});
        const size_t rank = in[0].shape.size();
        if (rank < 1 || rank > 3) {
          Fail(attrs, ErrorCode::ShapeMismatch,
               fmt::format("input 0 must have rank 1, 2 or 3, got shape {}", ShapeToString(in[0].shape)));
        }
        Spacing(attrs);
        return Types{in[0]};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        ctx.backend.Physics().Laplacian(in[0].data(), out[0].data(), in[0].shape().data(), in[0].rank(),
                                        Spacing(ctx.attrs), in[0].dtype());
      }};
}

// u [n] -> stencil [n].
OpImpl Stencil1D(void (PhysicsSurface::*method)(BP_PARAMS_Stencil1D)) {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        FloatInputs(attrs, in, {0});
        Vectors(attrs, in, {0});
        Spacing(attrs);
        return Types{in[0]};
      },
      [method](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        (ctx.backend.Physics().*method)(in[0].data(), out[0].data(), in[0].numel(), Spacing(ctx.attrs), in[0].dtype());
      }};
}

// density [n], velocity [n] -> d(rho v)/dx [n].
OpImpl MadelungContinuity() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        FloatInputs(attrs, in, {0, 1});
        Vectors(attrs, in, {0, 1});
        Spacing(attrs);
        return Types{in[0]};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        ctx.backend.Physics().MadelungContinuity(in[0].data(), in[1].data(), out[0].data(), in[0].numel(),
                                                 Spacing(ctx.attrs), in[0].dtype());
      }};
}

// re [n], im [n] -> re [n], im [n].
OpImpl FFT(void (PhysicsSurface::*method)(BP_PARAMS_FFT)) {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        FloatInputs(attrs, in, {0, 1});
        Vectors(attrs, in, {0, 1});
        return Types{in[0], in[0]};
      },
      [method](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        Tensor im = out.size() > 1 ? out[1] : Tensor(in[1].dtype(), in[1].shape());
        (ctx.backend.Physics().*method)(in[0].data(), in[1].data(), out[0].data(), im.data(), in[0].numel(),
                                        in[0].dtype());
      }};
}

// re [..., n], im [..., n] (im optional: a zero imaginary part) -> re, im [..., n]: one
// transform per row of the last axis.
OpImpl BatchedFFT(void (PhysicsSurface::*method)(BP_PARAMS_FFT)) {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, kFloatDTypes);
        ExpectMinRank(attrs, in, 0, 1);
        if (Present(in, 1)) {
          FloatInputs(attrs, in, {0, 1});
          ExpectShape(attrs, in, 1, in[0].shape);
        }
        return Types{in[0], in[0]};
      },
      [method](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const bool has_im = in.size() > 1 && in[1].defined();
        Tensor im = out.size() > 1 ? out[1] : Tensor(in[0].dtype(), in[0].shape());
        const int64_t n = in[0].shape().back();
        const int64_t rows = n == 0 ? 0 : in[0].numel() / n;
        const DType d = in[0].dtype();
        for (int64_t r = 0; r < rows; ++r) {
          const size_t off = DTypeStorageBytes(d, r * n);
          (ctx.backend.Physics().*method)(static_cast<const char*>(in[0].data()) + off,
                                          has_im ? static_cast<const char*>(in[1].data()) + off : nullptr,
                                          static_cast<char*>(out[0].data()) + off, static_cast<char*>(im.data()) + off,
                                          n, d);
        }
      }};
}

// ---- pospop ----------------------------------------------------------------------------------------
// words of `word` dtype, any shape (counted flat) -> counts int64 [bits], bit 0 first.
OpImpl PosPopOp(DType word, int64_t bits, void (*count)(PosPopSurface&, int64_t*, const Tensor&)) {
  return OpImpl{
      [word, bits](std::span<const TensorType> in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, DTypeSet{word});
        return Types{{DType::Int64, {bits}}};
      },
      [count](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        std::memset(out[0].data(), 0, out[0].nbytes());  // the kernels accumulate; start fresh
        count(ctx.backend.PosPop(), out[0].data_as<int64_t>(), in[0]);
      }};
}

void AddPosPop(OpRegistry& r) {
  r.Add("pospop.count8", PosPopOp(DType::Uint8, 8, [](PosPopSurface& s, int64_t* c, const Tensor& t) {
          s.Count8(c, t.data_as<uint8_t>(), t.numel());
        }));
  r.Add("pospop.count16", PosPopOp(DType::Uint16, 16, [](PosPopSurface& s, int64_t* c, const Tensor& t) {
          s.Count16(c, t.data_as<uint16_t>(), t.numel());
        }));
  r.Add("pospop.count32", PosPopOp(DType::Uint32, 32, [](PosPopSurface& s, int64_t* c, const Tensor& t) {
          s.Count32(c, t.data_as<uint32_t>(), t.numel());
        }));
  r.Add("pospop.count64", PosPopOp(DType::Uint64, 64, [](PosPopSurface& s, int64_t* c, const Tensor& t) {
          s.Count64(c, t.data_as<uint64_t>(), t.numel());
        }));
  r.Add("pospop.count_string", PosPopOp(DType::Uint8, 8, [](PosPopSurface& s, int64_t* c, const Tensor& t) {
          s.CountString(c, std::string_view(t.data_as<char>(), static_cast<size_t>(t.numel())));
        }));
}

}  // namespace

void RegisterResearchOps(OpRegistry& r) {
  r.Add("hawkes.intensity", HawkesIntensity());
  r.Add("hawkes.kernel_matrix", HawkesKernelMatrix());
  r.Add("hawkes.log_likelihood", HawkesLogLikelihood());
  r.Add("hawkes.simulate", HawkesSimulate());

  r.Add("vsa.bind", Pointwise(&Backend::VSA, &VSASurface::Bind));
  r.Add("vsa.bundle", Pointwise(&Backend::VSA, &VSASurface::Bundle));
  r.Add("vsa.similarity", VSASimilarity());
  r.Add("vsa.permute", VSAPermute(&VSASurface::Permute));
  r.Add("vsa.inverse_permute", VSAPermute(&VSASurface::InversePermute));

  r.Add("active_inference.belief_update", BeliefUpdate());
  r.Add("active_inference.expected_free_energy", ExpectedFreeEnergy());
  r.Add("active_inference.free_energy", FreeEnergy());
  r.Add("active_inference.precision_weight",
        Pointwise(&Backend::ActiveInference, &ActiveInferenceSurface::PrecisionWeight));

  r.Add("predictive_coding.prediction", Prediction());
  r.Add("predictive_coding.prediction_error",
        Pointwise(&Backend::PredictiveCoding, &PredictiveCodingSurface::PredictionError));
  r.Add("predictive_coding.update_representation",
        PredictiveUpdate(&PredictiveCodingSurface::UpdateRepresentation, false));
  r.Add("predictive_coding.update_weights", PredictiveUpdate(&PredictiveCodingSurface::UpdateWeights, true));

  r.Add("markov_blanket.flow_active", MarkovFlow(&CausalSurface::MarkovFlowActive));
  r.Add("markov_blanket.flow_internal", MarkovFlow(&CausalSurface::MarkovFlowInternal));
  r.Add("markov_blanket.mutual_information", MutualInformation());
  r.Add("markov_blanket.partition", BlanketPartition());

  r.Add("causal.backdoor_adjustment", Backdoor());
  r.Add("causal.cate", Pointwise(&Backend::Causal, &CausalSurface::CATE));
  r.Add("causal.counterfactual", Counterfactual());
  r.Add("causal.dag_markov_factorization", DAGFactorization());
  r.Add("causal.do_calculus", DoIntervene());
  r.Add("causal.frontdoor_adjustment", Frontdoor());
  r.Add("causal.iv_estimate", IVEstimate());
  r.Add("causal.cholesky", Cholesky());

  r.Add("physics.laplacian", Laplacian());
  r.Add("physics.laplacian4", Stencil1D(&PhysicsSurface::Laplacian4));
  r.Add("physics.grad1d", Stencil1D(&PhysicsSurface::Grad1D));
  r.Add("physics.divergence1d", Stencil1D(&PhysicsSurface::Divergence1D));
  r.Add("physics.fft1d", FFT(&PhysicsSurface::FFT1D));
  r.Add("physics.ifft1d", FFT(&PhysicsSurface::IFFT1D));
  r.Add("physics.fft", BatchedFFT(&PhysicsSurface::FFT1D));
  r.Add("physics.ifft", BatchedFFT(&PhysicsSurface::IFFT1D));
  r.Add("physics.quantum_potential", Stencil1D(&PhysicsSurface::QuantumPotential));
  r.Add("physics.bohmian_velocity", Stencil1D(&PhysicsSurface::BohmianVelocity));
  r.Add("physics.madelung_continuity", MadelungContinuity());

  AddPosPop(r);
}

}  // namespace backplane::runtime::ops
