// Graph-level lowerings of the attention, masking, positional, embedding, convolution, pooling and
// projection ops. Graph layouts (all row-major; "..." = leading dims, batched):
//
//   attention.sdpa            q [..., Sq, D], k [..., Sk, D], v [..., Sk, Dv] -> [..., Sq, Dv]
//                             (same leading dims; attr causal, bottom-right aligned)
//   attention.mqa / gqa /     q [B, H, Sq, D], k and v [B, KV, Sk, D] -> [B, H, Sq, D];
//   attention.sliding_window  mqa: KV = 1; gqa: KV = num_kv_heads; sliding_window: KV divides H
//                             (usually KV = H), causal, each query sees the last `window` keys.
//                             num_heads / num_kv_heads / head_dim must match the shapes; query
//                             head h uses KV head h / (H / KV); gqa's alibi_slope s gives head h
//                             the slope s^(h+1).
//   masking.apply             logits [...], mask broadcastable to logits -> logits' shape
//   masking.causal            x [..., Sq, Sk] (only its last two dims are read) -> [Sq, Sk]
//   positional.rope           x [..., S, H, D], head_dim = D (even) -> same shape
//   positional.alibi          scores [..., Sq, Sk], slope [1] -> same shape
//   positional.rope_pairs     x [..., 2h], cos [h], sin [h] -> same shape (each row rotated)
//   embedding.token           ids i32 [...], table [V, D] -> [..., D]
//   embedding.bag             ids i32 [n], offsets i32 [bags], table [V, D] -> [bags, D]
//                             (mode "sum" only)
//   convolution.conv1d/2d/3d  x [N, Cin, (D,) (H,) W], w [Cout, Cin, k...], bias [Cout]
//                             -> [N, Cout, out...], out = floor((in + 2p - d(k-1) - 1) / s) + 1
//   convolution.conv_transpose2d  x [N, Cin, H, W], w [Cin, Cout, kH, kW], bias [Cout]
//                             -> [N, Cout, oH, oW], out = (in-1)s - 2p + d(k-1) + 1 + out_pad
//                             (0 <= out_pad < max(s, d)). Convolutions take groups >= 1 (w
//                             [Cout, Cin / groups, k...], one kernel call per group; transposed:
//                             groups 1); an empty spatial input gives an empty output; the
//                             catalog lists bias as required, the lowering also runs without it.
//   pooling.max/avg_pool2d    x [N, C, H, W] -> [N, C, oH, oW], out = floor((in + 2p - k) / s) + 1,
//                             0 <= pad <= kernel / 2; avg excludes padding from the count.
//   pooling.adaptive_*_pool2d x [N, C, H, W] -> [N, C, out_h, out_w] (PyTorch windows)
//   projection.linear         x [..., in], w [out, in], bias [out]? -> [..., out] (x W^T + b)
//   projection.fused_qkv      x [..., Din], w [3D, Din], bias [3D]? -> q, k, v each [..., D]
//                             (rows [0, D) of w make q, [D, 2D) k, [2D, 3D) v)
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "runtime/ops/lowering.hpp"
#include "runtime/ops/ops.hpp"

namespace backplane::runtime::ops {
namespace {

using Span = std::span<const TensorType>;

// Pointer to element `offset` of a floating tensor.
const void* At(const Tensor& t, int64_t offset) {
  return static_cast<const char*>(t.data()) + DTypeStorageBytes(t.dtype(), offset);
}
void* At(Tensor& t, int64_t offset) { return static_cast<char*>(t.data()) + DTypeStorageBytes(t.dtype(), offset); }
const void* OptionalData(std::span<const Tensor> in, size_t index) {
  return index < in.size() && in[index].defined() ? in[index].data() : nullptr;
}

// Dimension `i` of input `index`, counted from the end when negative.
int64_t Dim(Span in, size_t index, int64_t i) {
  const Shape& s = in[index].shape;
  return s[static_cast<size_t>(i < 0 ? static_cast<int64_t>(s.size()) + i : i)];
}

void ExpectDimsEqual(const Attrs& attrs, const std::string& what, int64_t got, int64_t want) {
  if (got != want) Fail(attrs, ErrorCode::ShapeMismatch, fmt::format("{} must be {}, got {}", what, want, got));
}

// An int attribute in [lo, hi].
int64_t IntInRange(const Attrs& attrs, const std::string& name, int64_t lo, int64_t hi = INT64_MAX) {
  const int64_t v = attrs.Int(name);
  if (v < lo || v > hi) {
    attrs.Fail(name, hi == INT64_MAX ? fmt::format(">= {}", lo) : fmt::format("in [{}, {}]", lo, hi),
               std::to_string(v));
  }
  return v;
}

// A required size attribute must equal the size the shapes give.
void ExpectAttrIs(const Attrs& attrs, const std::string& name, int64_t actual) {
  const int64_t v = attrs.Int(name);
  if (v != actual) attrs.Fail(name, fmt::format("{} (from the input shapes)", actual), std::to_string(v));
}

// A size attribute that, when set (non-zero), must equal the size the shapes give.
void ExpectSizeAttr(const Attrs& attrs, const std::string& name, int64_t actual) {
  const int64_t v = attrs.Int(name);
  if (v != 0 && v != actual) {
    attrs.Fail(name, fmt::format("0 or {} (from the input shapes)", actual), std::to_string(v));
  }
}

// Leading dims of input `index` that precede its last `inner` dims, and their product.
Shape Leading(Span in, size_t index, size_t inner) {
  const Shape& s = in[index].shape;
  return Shape(s.begin(), s.end() - static_cast<std::ptrdiff_t>(inner));
}
int64_t LeadingCount(const Tensor& t, size_t inner) { return Product(t.shape(), 0, t.shape().size() - inner); }

// ---- attention --------------------------------------------------------------------------------------
std::vector<TensorType> SdpaInfer(Span in, const Attrs& attrs) {
  ExpectDType(attrs, in, 0, kFloatDTypes);
  ExpectSameDType(attrs, in, {0, 1, 2});
  for (size_t i = 0; i < 3; ++i) ExpectMinRank(attrs, in, i, 2);
  const Shape lead = Leading(in, 0, 2);
  for (size_t i = 1; i < 3; ++i) {
    if (Leading(in, i, 2) != lead) {
      Fail(attrs, ErrorCode::ShapeMismatch,
           fmt::format("q {}, k {} and v {} must share their leading dims", ShapeToString(in[0].shape),
                       ShapeToString(in[1].shape), ShapeToString(in[2].shape)));
    }
  }
  ExpectDimsEqual(attrs, "k's last dim (depth, as q's)", Dim(in, 1, -1), Dim(in, 0, -1));
  ExpectDimsEqual(attrs, "v's key count (as k's)", Dim(in, 2, -2), Dim(in, 1, -2));
  Shape out = in[0].shape;
  out.back() = Dim(in, 2, -1);
  return {{in[0].dtype, out}};
}

void SdpaRun(OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
  const int64_t sq = in[0].dim(-2), d = in[0].dim(-1);
  const int64_t sk = in[1].dim(-2), dv = in[2].dim(-1);
  const FlashAttentionConfig config{.Causal = ctx.attrs.Bool("causal")};
  for (int64_t b = 0; b < LeadingCount(in[0], 2); ++b) {
    ctx.backend.Attention().ScaledDotProductAttention(config, At(in[0], b * sq * d), At(in[1], b * sk * d),
                                                      At(in[2], b * sk * dv), At(out[0], b * sq * dv), sq, sk, d, dv,
                                                      in[0].dtype());
  }
}

enum class HeadsKind { kMqa, kGqa, kSlidingWindow };

// q [B, H, Sq, D], k and v [B, KV, Sk, D]: checks the shapes against each other and the attrs.
std::vector<TensorType> HeadsInfer(HeadsKind kind, Span in, const Attrs& attrs) {
  ExpectDType(attrs, in, 0, kFloatDTypes);
  ExpectSameDType(attrs, in, {0, 1, 2});
  for (size_t i = 0; i < 3; ++i) ExpectRank(attrs, in, i, 4);
  ExpectShape(attrs, in, 2, in[1].shape);
  const int64_t h = Dim(in, 0, 1), kv = Dim(in, 1, 1), d = Dim(in, 0, 3);
  ExpectDimsEqual(attrs, "k's batch (as q's)", Dim(in, 1, 0), Dim(in, 0, 0));
  ExpectDimsEqual(attrs, "k's head dim (as q's)", Dim(in, 1, 3), d);
  if (kind != HeadsKind::kSlidingWindow) {
    ExpectAttrIs(attrs, "num_heads", h);
    ExpectAttrIs(attrs, "head_dim", d);
  }
  if (kind == HeadsKind::kMqa) ExpectDimsEqual(attrs, "k's head count (one shared K/V head)", kv, 1);
  if (kind == HeadsKind::kGqa) {
    ExpectAttrIs(attrs, "num_kv_heads", kv);
    IntInRange(attrs, "window", 0);
    IntInRange(attrs, "window_right", -1);
    const double slope = attrs.Float("alibi_slope");
    if (!std::isfinite(slope) || slope < 0) attrs.Fail("alibi_slope", "finite and >= 0", fmt::format("{}", slope));
  }
  if (kind == HeadsKind::kSlidingWindow) {
    IntInRange(attrs, "window", 1);
    IntInRange(attrs, "window_right", -1);
  }
  if (h == 0 || kv == 0 || h % kv != 0) {
    Fail(attrs, ErrorCode::ShapeMismatch,
         fmt::format("the K/V head count {} must be a positive divisor of the query head count {}", kv, h));
  }
  if (d == 0) Fail(attrs, ErrorCode::ShapeMismatch, "the head dim must be > 0");
  return {in[0]};
}

MultiHeadAttentionConfig HeadsConfig(HeadsKind kind, const Attrs& attrs, int64_t h, int64_t kv, int64_t d) {
  MultiHeadAttentionConfig c{.NumHeads = h, .HeadDim = d, .KVHeadCount = kv};
  if (kind == HeadsKind::kSlidingWindow) {  // window_right 0 (the default): causal
    c.WindowSize = attrs.Int("window");
    c.WindowRight = attrs.Int("window_right");
    return c;
  }
  c.Causal = attrs.Bool("causal");
  if (kind == HeadsKind::kGqa) {
    c.WindowSize = attrs.Int("window");
    c.WindowRight = attrs.Int("window_right");
    c.ALiBiSlope = static_cast<float>(attrs.Float("alibi_slope"));
  }
  return c;
}

// [B, H, S, D] -> [B, S, H*D], the layout of Attention.MultiHeadAttention.
Tensor MergeHeads(Backend& b, const Tensor& t) {
  const Shape& s = t.shape();
  Tensor out(t.dtype(), {s[0], s[2], s[1] * s[3]});
  b.Shape().MergeHeads(t.data(), out.data(), s[0], s[2], s[1], s[3], t.dtype());
  return out;
}

// Query count from which attention runs head by head on FlashAttention, straight on the
// [B, H, S, D] slices: no merged copies of q, k, v and the output (at 32 heads x 8192 x 128 in f32,
// 512 MiB). On this CPU the time is within the noise of the merged call from 1024 queries on and
// up to 1.5x slower below (bench: `backplane_bench --benchmark_filter=lowering`, docs/performance.md).
constexpr int64_t kFlashMinQueries = 1024;

// FlashAttention has no window and no ALiBi bias; it takes the plain and causal cases.
bool UsesFlashAttention(const MultiHeadAttentionConfig& c, int64_t sq) {
  return c.WindowSize == 0 && c.ALiBiSlope == 0.0f && sq >= kFlashMinQueries;
}

// One Attention.FlashAttention call per (batch, query head) on the [Sq, D] and [Sk, D] slices;
// query head hh reads K/V head hh / (H / KV).
void FlashHeadsRun(OpContext& ctx, const MultiHeadAttentionConfig& mha, std::span<const Tensor> in, Tensor& out) {
  const int64_t batch = in[0].dim(0), h = in[0].dim(1), sq = in[0].dim(2), d = in[0].dim(3);
  const int64_t kv = in[1].dim(1), sk = in[1].dim(2), group = h / kv;
  const FlashAttentionConfig config{.Causal = mha.Causal};
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t hh = 0; hh < h; ++hh) {
      const int64_t kv_offset = (b * kv + hh / group) * sk * d;
      ctx.backend.Attention().FlashAttention(config, At(in[0], (b * h + hh) * sq * d), At(in[1], kv_offset),
                                             At(in[2], kv_offset), At(out, (b * h + hh) * sq * d), sq, sk, d, d,
                                             in[0].dtype());
    }
  }
}

// Short sequences: heads to the kernel's [S, H*D] rows, one MultiHeadAttention call per batch
// (parallel over heads), and back. Long ones: FlashHeadsRun.
void HeadsRun(HeadsKind kind, OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
  const int64_t batch = in[0].dim(0), h = in[0].dim(1), sq = in[0].dim(2), d = in[0].dim(3);
  const int64_t kv = in[1].dim(1), sk = in[1].dim(2);
  const MultiHeadAttentionConfig config = HeadsConfig(kind, ctx.attrs, h, kv, d);
  if (UsesFlashAttention(config, sq)) {
    FlashHeadsRun(ctx, config, in, out[0]);
    return;
  }
  const Tensor q = MergeHeads(ctx.backend, in[0]);
  const Tensor k = MergeHeads(ctx.backend, in[1]);
  const Tensor v = MergeHeads(ctx.backend, in[2]);
  Tensor o(q.dtype(), q.shape());
  for (int64_t b = 0; b < batch; ++b) {
    ctx.backend.Attention().MultiHeadAttention(config, At(q, b * sq * h * d), At(k, b * sk * kv * d),
                                               At(v, b * sk * kv * d), At(o, b * sq * h * d), sq, sk, q.dtype());
  }
  ctx.backend.Shape().ViewAsHeads(o.data(), out[0].data(), batch, sq, h, d, o.dtype());
}

OpImpl HeadsOp(HeadsKind kind) {
  return OpImpl{
      [kind](Span in, const Attrs& attrs) { return HeadsInfer(kind, in, attrs); },
      [kind](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) { HeadsRun(kind, ctx, in, out); }};
}

// ---- masking ----------------------------------------------------------------------------------------
OpImpl ApplyMaskOp() {
  return OpImpl{
      [](Span in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, kFloatDTypes);
        ExpectSameDType(attrs, in, {0, 1});
        if (BroadcastShapes(attrs, in[0].shape, in[1].shape) != in[0].shape) {
          Fail(attrs, ErrorCode::ShapeMismatch,
               fmt::format("mask {} does not broadcast to the logits' shape {}", ShapeToString(in[1].shape),
                           ShapeToString(in[0].shape)));
        }
        return std::vector<TensorType>{in[0]};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const Tensor mask = Expand(in[1], in[0].shape());
        ctx.backend.Masking().ApplyMask(in[0].data(), mask.data(), out[0].data(), in[0].numel(), in[0].dtype());
      }};
}

OpImpl CausalMaskOp() {
  return OpImpl{
      [](Span in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, kFloatDTypes);
        ExpectMinRank(attrs, in, 0, 2);
        return std::vector<TensorType>{{in[0].dtype, {Dim(in, 0, -2), Dim(in, 0, -1)}}};
      },
      [](OpContext& ctx, std::span<const Tensor>, std::span<Tensor> out) {
        ctx.backend.Masking().CausalMask(out[0].data(), out[0].dim(0), out[0].dim(1), out[0].dtype());
      }};
}

// ---- positional -------------------------------------------------------------------------------------
OpImpl RopeOp() {
  return OpImpl{
      [](Span in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, kFloatDTypes);
        ExpectMinRank(attrs, in, 0, 3);
        const int64_t d = Dim(in, 0, -1);
        ExpectAttrIs(attrs, "head_dim", d);
        if (d % 2 != 0) {
          Fail(attrs, ErrorCode::ShapeMismatch,
               fmt::format("the head dim must be even (rotated pairs), got {}", d));
        }
        const double base = attrs.Float("base");
        if (!std::isfinite(base) || base <= 0) attrs.Fail("base", "finite and > 0", fmt::format("{}", base));
        IntInRange(attrs, "position_start", 0);
        return std::vector<TensorType>{in[0]};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const RoPEConfig config{ctx.attrs.Float("base"), ctx.attrs.Int("position_start")};
        const int64_t s = in[0].dim(-3), h = in[0].dim(-2), d = in[0].dim(-1);
        const int64_t n = s * h * d;
        for (int64_t b = 0; b < LeadingCount(in[0], 3); ++b) {
          ctx.backend.RoPE().RoPE(config, At(in[0], b * n), At(out[0], b * n), s, h, d, in[0].dtype());
        }
      }};
}

OpImpl AlibiOp() {
  return OpImpl{
      [](Span in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, kFloatDTypes);
        ExpectSameDType(attrs, in, {0, 1});
        ExpectMinRank(attrs, in, 0, 2);
        ExpectShape(attrs, in, 1, {1});
        return std::vector<TensorType>{in[0]};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const int64_t sq = in[0].dim(-2), sk = in[0].dim(-1);
        for (int64_t b = 0; b < LeadingCount(in[0], 2); ++b) {
          ctx.backend.Masking().ALiBiBias(At(in[0], b * sq * sk), in[1].data(), At(out[0], b * sq * sk), sq,
                                          sk, in[0].dtype());
        }
      }};
}

OpImpl RopePairsOp() {
  return OpImpl{
      [](Span in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, kFloatDTypes);
        ExpectSameDType(attrs, in, {0, 1, 2});
        ExpectMinRank(attrs, in, 0, 1);
        const int64_t d = Dim(in, 0, -1);
        if (d % 2 != 0) {
          Fail(attrs, ErrorCode::ShapeMismatch, fmt::format("the last dim must be even (pairs), got {}", d));
        }
        ExpectShape(attrs, in, 1, {d / 2});
        ExpectShape(attrs, in, 2, {d / 2});
        return std::vector<TensorType>{in[0]};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const int64_t d = in[0].dim(-1);
        for (int64_t r = 0; r < LeadingCount(in[0], 1); ++r) {
          ctx.backend.RoPE().RoPEPairs(At(out[0], r * d), At(in[0], r * d), in[1].data(), in[2].data(), d / 2,
                                       in[0].dtype());
        }
      }};
}

// ---- embedding --------------------------------------------------------------------------------------
const DTypeSet kIds{DType::Int32};

// The table [V, D] at input `index`.
void ExpectTable(Span in, const Attrs& attrs, size_t index) {
  ExpectDType(attrs, in, index, kFloatDTypes);
  ExpectRank(attrs, in, index, 2);
}

OpImpl TokenOp() {
  return OpImpl{
      [](Span in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, kIds);
        ExpectTable(in, attrs, 1);
        ExpectSizeAttr(attrs, "vocab_size", Dim(in, 1, 0));
        ExpectSizeAttr(attrs, "d_model", Dim(in, 1, 1));
        Shape out = in[0].shape;
        out.push_back(Dim(in, 1, 1));
        return std::vector<TensorType>{{in[1].dtype, out}};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        ctx.backend.Embedding().Lookup(in[1].data(), in[0].data_as<int32_t>(), out[0].data(), in[1].dim(0),
                                       in[1].dim(1), in[0].numel(), in[1].dtype());
      }};
}

OpImpl BagOp() {
  return OpImpl{
      [](Span in, const Attrs& attrs) {
        if (attrs.String("mode") != "sum") attrs.Fail("mode", "\"sum\"", "\"" + attrs.String("mode") + "\"");
        ExpectDType(attrs, in, 0, kIds);
        ExpectDType(attrs, in, 1, kIds);
        ExpectRank(attrs, in, 0, 1);
        ExpectRank(attrs, in, 1, 1);
        ExpectTable(in, attrs, 2);
        return std::vector<TensorType>{{in[2].dtype, {Dim(in, 1, 0), Dim(in, 2, 1)}}};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        ctx.backend.Embedding().Bag(in[2].data(), in[0].data_as<int32_t>(), in[1].data_as<int32_t>(),
                                    out[0].data(), in[2].dim(0), in[2].dim(1), in[1].numel(), in[0].numel(),
                                    in[2].dtype());
      }};
}

// ---- convolution ------------------------------------------------------------------------------------
// One spatial axis of a convolution (out_pad: transposed only).
struct ConvAxis {
  int64_t stride = 1, pad = 0, dil = 1, out_pad = 0;
  std::string pad_name, dil_name;  // the attributes, for messages
};

// The r spatial axes from the attributes, checked: conv1d names them stride/padding/dilation, the
// others stride_<ax>/pad_<ax>/dil_<ax> (and out_pad_<ax>) with ax in d, h, w.
std::vector<ConvAxis> ConvAxes(const Attrs& attrs, size_t r, bool transposed) {
  static const char* kNames[] = {"d", "h", "w"};
  std::vector<ConvAxis> axes(r);
  for (size_t i = 0; i < r; ++i) {
    const std::string ax = kNames[3 - r + i];
    const bool plain = r == 1;
    ConvAxis& a = axes[i];
    a.stride = IntInRange(attrs, plain ? "stride" : "stride_" + ax, 1);
    a.pad_name = plain ? "padding" : "pad_" + ax;
    a.dil_name = plain ? "dilation" : "dil_" + ax;
    a.pad = IntInRange(attrs, a.pad_name, 0);
    a.dil = IntInRange(attrs, a.dil_name, 1);
    if (transposed) a.out_pad = IntInRange(attrs, "out_pad_" + ax, 0, std::max(a.stride, a.dil) - 1);
  }
  return axes;
}

// Output extent of one axis; an empty input has an empty output.
int64_t ConvExtent(const Attrs& attrs, const ConvAxis& a, int64_t in, int64_t k, bool transposed) {
  if (in == 0) return 0;
  const int64_t span = a.dil * (k - 1) + 1;  // the dilated kernel
  if (transposed) {
    const int64_t out = (in - 1) * a.stride - 2 * a.pad + span + a.out_pad;
    if (out < 1) {
      Fail(attrs, ErrorCode::ShapeMismatch,
           fmt::format("the output extent {} is < 1 ({} {} too large)", out, a.pad_name, a.pad));
    }
    return out;
  }
  if (in + 2 * a.pad < span) {
    Fail(attrs, ErrorCode::ShapeMismatch,
         fmt::format("the padded input extent {} ({} {}) is smaller than the dilated kernel {} ({} {})",
                     in + 2 * a.pad, a.pad_name, a.pad, span, a.dil_name, a.dil));
  }
  return (in + 2 * a.pad - span) / a.stride + 1;
}

// x [N, Cin, s...], w [Cout, Cin, k...] (transposed: [Cin, Cout, k...]), bias [Cout].
// Grouped (groups > 1): w is [Cout, Cin / groups, k...], both channel counts multiples of groups.
std::vector<TensorType> ConvInfer(size_t r, bool transposed, Span in, const Attrs& attrs) {
  const int64_t groups = transposed ? 1 : attrs.Int("groups");  // conv_transpose2d has no groups
  if (groups < 1) attrs.Fail("groups", "a positive integer", std::to_string(groups));
  ExpectDType(attrs, in, 0, kFloatDTypes);
  ExpectSameDType(attrs, in, {0, 1, 2});
  ExpectRank(attrs, in, 0, static_cast<int64_t>(r) + 2);
  ExpectRank(attrs, in, 1, static_cast<int64_t>(r) + 2);
  const int64_t cout = Dim(in, 1, transposed ? 1 : 0);
  if (groups > 1) {
    if (Dim(in, 0, 1) % groups != 0 || cout % groups != 0) {
      attrs.Fail("groups", fmt::format("a divisor of the input ({}) and output ({}) channel counts", Dim(in, 0, 1), cout),
                 std::to_string(groups));
    }
    ExpectDimsEqual(attrs, "w's input channels (dim 1) times groups", Dim(in, 1, 1) * groups, Dim(in, 0, 1));
  } else {
    ExpectDimsEqual(attrs, fmt::format("w's input channels (dim {})", transposed ? 0 : 1),
                    Dim(in, 1, transposed ? 0 : 1), Dim(in, 0, 1));
  }
  if (Present(in, 2)) ExpectShape(attrs, in, 2, {cout});
  const std::vector<ConvAxis> axes = ConvAxes(attrs, r, transposed);
  Shape out = {Dim(in, 0, 0), cout};
  for (size_t i = 0; i < r; ++i) {
    const int64_t k = Dim(in, 1, static_cast<int64_t>(i) + 2);
    if (k == 0) Fail(attrs, ErrorCode::ShapeMismatch, "kernel extents must be > 0");
    out.push_back(ConvExtent(attrs, axes[i], Dim(in, 0, static_cast<int64_t>(i) + 2), k, transposed));
  }
  return {{in[0].dtype, out}};
}

// One kernel call on (x, w, bias, y) with cin input and cout output channels.
using ConvCall = std::function<void(const void* x, const void* w, const void* bias, void* y, int64_t cin, int64_t cout)>;

// groups == 1: one call. Otherwise one call per group on contiguous copies of the group's input
// channels, the group's rows of w and bias, and a contiguous output copied into y's channels.
void GroupedConv(const Attrs& attrs, std::span<const Tensor> in, Tensor& y, const ConvCall& call) {
  const Tensor& x = in[0];
  const Tensor& w = in[1];
  const void* bias = OptionalData(in, 2);
  const int64_t groups = attrs.Int("groups");
  const int64_t cin = x.dim(1), cout = y.dim(1);
  if (groups == 1) return call(x.data(), w.data(), bias, y.data(), cin, cout);
  const int64_t n = x.dim(0), cin_g = cin / groups, cout_g = cout / groups;
  const int64_t x_plane = x.numel() / std::max<int64_t>(1, n * cin), y_plane = y.numel() / std::max<int64_t>(1, n * cout);
  const size_t e = DTypeStorageBytes(x.dtype(), 1);
  const size_t w_group = static_cast<size_t>(w.numel() / groups) * e;
  Shape xs = x.shape(), ys = y.shape();
  xs[1] = cin_g;
  ys[1] = cout_g;
  Tensor xg(x.dtype(), xs), yg(y.dtype(), ys);
  const auto* xb = static_cast<const uint8_t*>(x.data());
  auto* yb = static_cast<uint8_t*>(y.data());
  const size_t x_block = static_cast<size_t>(cin_g * x_plane) * e, y_block = static_cast<size_t>(cout_g * y_plane) * e;
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t b = 0; b < n; ++b) {
      std::memcpy(static_cast<uint8_t*>(xg.data()) + static_cast<size_t>(b) * x_block,
                  xb + static_cast<size_t>(b * cin + g * cin_g) * static_cast<size_t>(x_plane) * e, x_block);
    }
    const void* bias_g = bias != nullptr ? static_cast<const uint8_t*>(bias) + static_cast<size_t>(g * cout_g) * e : nullptr;
    call(xg.data(), static_cast<const uint8_t*>(w.data()) + static_cast<size_t>(g) * w_group, bias_g, yg.data(), cin_g,
         cout_g);
    for (int64_t b = 0; b < n; ++b) {
      std::memcpy(yb + static_cast<size_t>(b * cout + g * cout_g) * static_cast<size_t>(y_plane) * e,
                  static_cast<const uint8_t*>(yg.data()) + static_cast<size_t>(b) * y_block, y_block);
    }
  }
}

void Conv1dRun(OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
  const ConvAxis a = ConvAxes(ctx.attrs, 1, false)[0];
  const Tensor& x = in[0];
  const Tensor& w = in[1];
  Tensor& y = out[0];
  GroupedConv(ctx.attrs, in, y, [&](const void* xp, const void* wp, const void* bp, void* yp, int64_t cin, int64_t cout) {
    ctx.backend.Convolution().Conv1D(Conv1DConfig{a.stride, a.pad, a.dil}, xp, wp, bp, yp, x.dim(0), cin, x.dim(2), cout,
                                     w.dim(2), y.dim(2), x.dtype());
  });
}

Conv2DConfig Config2D(const std::vector<ConvAxis>& a) {
  return Conv2DConfig{a[0].stride, a[1].stride, a[0].pad, a[1].pad, a[0].dil, a[1].dil};
}

void Conv2dRun(OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
  const Tensor& x = in[0];
  const Tensor& w = in[1];
  Tensor& y = out[0];
  const Conv2DConfig config = Config2D(ConvAxes(ctx.attrs, 2, false));
  GroupedConv(ctx.attrs, in, y, [&](const void* xp, const void* wp, const void* bp, void* yp, int64_t cin, int64_t cout) {
    ctx.backend.Convolution().Conv2D(config, xp, wp, bp, yp, x.dim(0), cin, x.dim(2), x.dim(3), cout, w.dim(2), w.dim(3),
                                     y.dim(2), y.dim(3), x.dtype());
  });
}

void Conv3dRun(OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
  const std::vector<ConvAxis> a = ConvAxes(ctx.attrs, 3, false);
  const Conv3DConfig config{a[0].stride, a[1].stride, a[2].stride, a[0].pad, a[1].pad,
                            a[2].pad,    a[0].dil,    a[1].dil,    a[2].dil};
  const Tensor& x = in[0];
  const Tensor& w = in[1];
  Tensor& y = out[0];
  GroupedConv(ctx.attrs, in, y, [&](const void* xp, const void* wp, const void* bp, void* yp, int64_t cin, int64_t cout) {
    ctx.backend.Convolution().Conv3D(config, xp, wp, bp, yp, x.dim(0), cin, x.dim(2), x.dim(3), x.dim(4), cout, w.dim(2),
                                     w.dim(3), w.dim(4), y.dim(2), y.dim(3), y.dim(4), x.dtype());
  });
}

void ConvTranspose2dRun(OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
  const Tensor& x = in[0];
  const Tensor& w = in[1];
  ctx.backend.Convolution().ConvTranspose2D(Config2D(ConvAxes(ctx.attrs, 2, true)), x.data(), w.data(),
                                            OptionalData(in, 2), out[0].data(), x.dim(0), x.dim(1), x.dim(2), x.dim(3),
                                            w.dim(1), w.dim(2), w.dim(3), out[0].dim(2), out[0].dim(3), x.dtype());
}

OpImpl ConvOp(size_t r, bool transposed, RunFn run) {
  return OpImpl{
      [r, transposed](Span in, const Attrs& attrs) { return ConvInfer(r, transposed, in, attrs); },
      std::move(run)};
}

// ---- pooling ----------------------------------------------------------------------------------------
PoolConfig PoolFromAttrs(const Attrs& attrs) {
  PoolConfig c;
  c.KernelH = IntInRange(attrs, "kernel_h", 1);
  c.KernelW = IntInRange(attrs, "kernel_w", 1);
  c.StrideH = IntInRange(attrs, "stride_h", 1);
  c.StrideW = IntInRange(attrs, "stride_w", 1);
  c.PaddingH = IntInRange(attrs, "pad_h", 0, c.KernelH / 2);
  c.PaddingW = IntInRange(attrs, "pad_w", 0, c.KernelW / 2);
  return c;
}

int64_t PoolExtent(const Attrs& attrs, int64_t in, int64_t k, int64_t s, int64_t p) {
  if (in == 0) return 0;
  if (in + 2 * p < k) {
    Fail(attrs, ErrorCode::ShapeMismatch,
         fmt::format("the padded input extent {} is smaller than the kernel {}", in + 2 * p, k));
  }
  return (in + 2 * p - k) / s + 1;
}

using PoolMethod = void (PoolSurface::*)(BP_PARAMS_Pool2D);
using AdaptiveMethod = void (PoolSurface::*)(BP_PARAMS_AdaptivePool2D);

OpImpl PoolOp(PoolMethod method) {
  return OpImpl{
      [](Span in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, kFloatDTypes);
        ExpectRank(attrs, in, 0, 4);
        const PoolConfig c = PoolFromAttrs(attrs);
        Shape out = in[0].shape;
        out[2] = PoolExtent(attrs, out[2], c.KernelH, c.StrideH, c.PaddingH);
        out[3] = PoolExtent(attrs, out[3], c.KernelW, c.StrideW, c.PaddingW);
        return std::vector<TensorType>{{in[0].dtype, out}};
      },
      [method](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const Tensor& x = in[0];
        (ctx.backend.Pool().*method)(PoolFromAttrs(ctx.attrs), x.data(), out[0].data(), x.dim(0), x.dim(1),
                                     x.dim(2), x.dim(3), out[0].dim(2), out[0].dim(3), x.dtype());
      }};
}

OpImpl AdaptivePoolOp(AdaptiveMethod method) {
  return OpImpl{
      [](Span in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, kFloatDTypes);
        ExpectRank(attrs, in, 0, 4);
        Shape out = in[0].shape;
        out[2] = IntInRange(attrs, "out_h", 1);
        out[3] = IntInRange(attrs, "out_w", 1);
        if (out[0] * out[1] > 0 && (Dim(in, 0, 2) == 0 || Dim(in, 0, 3) == 0)) {
          Fail(attrs, ErrorCode::ShapeMismatch,
               fmt::format("an empty plane {} cannot be pooled", ShapeToString(in[0].shape)));
        }
        return std::vector<TensorType>{{in[0].dtype, out}};
      },
      [method](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const Tensor& x = in[0];
        (ctx.backend.Pool().*method)(x.data(), out[0].data(), x.dim(0), x.dim(1), x.dim(2), x.dim(3),
                                     out[0].dim(2), out[0].dim(3), x.dtype());
      }};
}

// ---- projection -------------------------------------------------------------------------------------
// x [..., in], w [rows, in], bias [rows]?: checks and returns x's leading shape.
Shape ProjectionInfer(Span in, const Attrs& attrs) {
  ExpectDType(attrs, in, 0, kFloatDTypes);
  ExpectSameDType(attrs, in, {0, 1, 2});
  ExpectMinRank(attrs, in, 0, 1);
  ExpectRank(attrs, in, 1, 2);
  ExpectDimsEqual(attrs, "w's dim 1 (x's last dim)", Dim(in, 1, 1), Dim(in, 0, -1));
  if (Present(in, 2)) ExpectShape(attrs, in, 2, {Dim(in, 1, 0)});
  return Leading(in, 0, 1);
}

// y [rows, out] = x [rows, in] W^T + bias: one MatmulTransB on W as stored, then the bias.
void Project(Backend& b, std::span<const Tensor> in, Tensor& y) {
  const Tensor& x = in[0];
  const Tensor& w = in[1];
  const int64_t n_out = w.dim(0), n_in = w.dim(1);
  const int64_t rows = LeadingCount(x, 1);
  b.MathExt().MatmulTransB(y.data(), x.data(), w.data(), rows, n_in, n_out, x.dtype());
  if (in.size() > 2 && in[2].defined()) {
    const Tensor bias = Expand(in[2], {rows, n_out});
    b.Elementwise().Add(y.data(), y.data(), bias.data(), y.numel(), y.dtype());
  }
}

OpImpl LinearOp() {
  return OpImpl{
      [](Span in, const Attrs& attrs) {
        Shape out = ProjectionInfer(in, attrs);
        ExpectSizeAttr(attrs, "in_features", Dim(in, 1, 1));
        ExpectSizeAttr(attrs, "out_features", Dim(in, 1, 0));
        out.push_back(Dim(in, 1, 0));
        return std::vector<TensorType>{{in[0].dtype, out}};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) { Project(ctx.backend, in, out[0]); }};
}

OpImpl FusedQkvOp() {
  return OpImpl{
      [](Span in, const Attrs& attrs) {
        Shape out = ProjectionInfer(in, attrs);
        const int64_t rows = Dim(in, 1, 0);
        if (rows % 3 != 0) {
          Fail(attrs, ErrorCode::ShapeMismatch, fmt::format("w's dim 0 must be 3 D (q, k, v), got {}", rows));
        }
        ExpectSizeAttr(attrs, "d_in", Dim(in, 1, 1));
        for (const char* name : {"d_q", "d_k", "d_v"}) ExpectSizeAttr(attrs, name, rows / 3);
        out.push_back(rows / 3);
        const TensorType t{in[0].dtype, out};
        return std::vector<TensorType>{t, t, t};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const int64_t d = out[0].shape().back();
        Tensor y(in[0].dtype(), {LeadingCount(in[0], 1), 3 * d});
        Project(ctx.backend, in, y);
        const int64_t sizes[] = {d, d, d};
        void* const parts[] = {out[0].data(), out[1].data(), out[2].data()};
        ctx.backend.Shape().Split(y.data(), y.shape().data(), 2, 1, sizes, 3, parts, y.dtype());
      }};
}

}  // namespace

void RegisterNnOps(OpRegistry& r) {
  r.Add("attention.sdpa", OpImpl{SdpaInfer, SdpaRun});
  r.Add("attention.mqa", HeadsOp(HeadsKind::kMqa));
  r.Add("attention.gqa", HeadsOp(HeadsKind::kGqa));
  r.Add("attention.sliding_window", HeadsOp(HeadsKind::kSlidingWindow));
  r.Add("masking.apply", ApplyMaskOp());
  r.Add("masking.causal", CausalMaskOp());
  r.Add("positional.rope", RopeOp());
  r.Add("positional.alibi", AlibiOp());
  r.Add("positional.rope_pairs", RopePairsOp());
  r.Add("embedding.token", TokenOp());
  r.Add("embedding.bag", BagOp());
  r.Add("convolution.conv1d", ConvOp(1, false, Conv1dRun));
  r.Add("convolution.conv2d", ConvOp(2, false, Conv2dRun));
  r.Add("convolution.conv3d", ConvOp(3, false, Conv3dRun));
  r.Add("convolution.conv_transpose2d", ConvOp(2, true, ConvTranspose2dRun));
  r.Add("pooling.max_pool2d", PoolOp(&PoolSurface::MaxPool2D));
  r.Add("pooling.avg_pool2d", PoolOp(&PoolSurface::AvgPool2D));
  r.Add("pooling.adaptive_avg_pool2d", AdaptivePoolOp(&PoolSurface::AdaptiveAvgPool2D));
  r.Add("pooling.adaptive_max_pool2d", AdaptivePoolOp(&PoolSurface::AdaptiveMaxPool2D));
  r.Add("projection.linear", LinearOp());
  r.Add("projection.fused_qkv", FusedQkvOp());
}

}  // namespace backplane::runtime::ops
