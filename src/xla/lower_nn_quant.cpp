// quant.*: per-tensor int8 quantisation and dequantisation in the reference's compute type, and
// the ggml block formats decoded from their bytes with integer ops (gathers of byte columns,
// shifts and masks from per-element tables built here from the same loops as the reference), f16
// and f32 fields by bitcast; every float formula in the reference's order (its products are
// exact, so only its adds round). block_matmul: the decoded W against x in f64, rounded once.
// Int4 tensors do not reach the device, so quant.dequant_int4 runs on the CPU.
#include <fmt/format.h>

#include <cmath>

#include "backplane/block_format.hpp"
#include "xla/lower_nn_common.hpp"

namespace backplane::xla::nn {
namespace {

std::vector<Value> DequantInt8(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const float scale = static_cast<float>(ctx.attrs().Float("scale"));
  const int64_t zp = static_cast<int8_t>(ctx.attrs().Int("zero_point"));
  const Value q = b.Convert(in[0], DType::Int32);
  const Value centred = b.Convert(b.Sub(q, b.SplatLike(q, static_cast<double>(zp))), DType::Float32);
  return {b.Mul(centred, b.SplatLike(centred, scale))};
}

std::vector<Value> QuantizeInt8(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const DType ct = ComputeType(in[0].dtype());
  const Value x = b.Convert(in[0], ct);
  ctx.Require(All(b, b.Compare(x, x, "EQ")), "argument 'src' must be free of NaN");
  const float scale = static_cast<float>(ctx.attrs().Float("scale"));
  const int64_t zp = static_cast<int8_t>(ctx.attrs().Int("zero_point"));
  // A correctly rounded x / scale: XLA rewrites a division by a constant into a product with its
  // rounded reciprocal, so the scale goes through an optimization barrier.
  const Value s = b.Scalar(ct, scale);
  const Value opaque = b.Emit("stablehlo.optimization_barrier", std::span(&s, 1), s.type);
  const Value r = b.Unary("stablehlo.round_nearest_even", b.Div(x, b.BroadcastTo(opaque, x.shape())));
  Value q = b.Add(b.Convert(r, DType::Float64), b.Splat({DType::Float64, x.shape()}, static_cast<double>(zp)));
  q = b.Min(b.Max(q, b.SplatLike(q, -128.0)), b.SplatLike(q, 127.0));
  return {b.Convert(q, DType::Int8)};
}

// ---- ggml block formats ---------------------------------------------------------------------------
// The blocks of one tensor: q [R, blocks, bytes] u8, decoded element by element.
class Blocks {
 public:
  Blocks(Builder& b, const Value& q, int64_t elements) : b_(b), q_(q), e_(elements) {}

  // Bytes idx[k] of each block as i32 [R, blocks, E].
  Value Bytes(const std::vector<int64_t>& idx) {
    return b_.Convert(TakeConst(b_, q_, 2, idx), DType::Int32);
  }
  // (byte idx[k] >> shift[k]) & mask[k].
  Value Bits(const std::vector<int64_t>& idx, const std::vector<int64_t>& shift, const std::vector<int64_t>& mask) {
    const Value v = ShiftRight(b_, Bytes(idx), Table(shift));
    return And(b_, v, Table(mask));
  }
  // A per-element i32 table broadcast over [R, blocks, E].
  Value Table(const std::vector<int64_t>& v) {
    std::vector<double> d(v.begin(), v.end());
    return b_.BroadcastInDim(b_.Constant({DType::Int32, {e_}}, d), Full(), std::vector<int64_t>{2});
  }
  Shape Full() const { return {q_.shape()[0], q_.shape()[1], e_}; }
  // A little-endian field of `bytes` bytes at `offset`, as u32 [R, blocks, 1].
  Value Field(int64_t offset, int64_t bytes) {
    std::vector<int64_t> idx;
    for (int64_t i = 0; i < bytes; ++i) idx.push_back(offset + i);
    const Value v = b_.Convert(TakeConst(b_, q_, 2, idx), DType::Uint32);  // [R, blocks, bytes]
    Value acc;
    for (int64_t i = 0; i < bytes; ++i) {
      std::vector<int64_t> st{0, 0, i}, lim{q_.shape()[0], q_.shape()[1], i + 1}, str{1, 1, 1};
      Value part = b_.Slice(v, st, lim, str);
      if (i > 0) part = b_.Binary("stablehlo.shift_left", part, b_.SplatLike(part, static_cast<double>(8 * i)));
      acc = i == 0 ? part : b_.Binary("stablehlo.or", acc, part);
    }
    return acc;
  }
  // An f16 field as f32 [R, blocks, E] (broadcast over the elements).
  Value F16(int64_t offset) {
    const Value u = b_.Convert(Field(offset, 2), DType::Uint16);
    const Value h = b_.Emit("stablehlo.bitcast_convert", std::span(&u, 1), {DType::Float16, u.shape()});
    return Spread(b_.Convert(h, DType::Float32));
  }
  Value F32(int64_t offset) {
    const Value u = Field(offset, 4);
    return Spread(b_.Emit("stablehlo.bitcast_convert", std::span(&u, 1), {DType::Float32, u.shape()}));
  }
  Value BF16(int64_t offset) {
    const Value u = b_.Binary("stablehlo.shift_left", Field(offset, 2), b_.Splat({DType::Uint32, {q_.shape()[0], q_.shape()[1], 1}}, 16.0));
    return Spread(b_.Emit("stablehlo.bitcast_convert", std::span(&u, 1), {DType::Float32, u.shape()}));
  }
  Value Spread(const Value& v) {
    if (e_ == 1) return v;
    return b_.BroadcastInDim(b_.Reshape(v, {q_.shape()[0], q_.shape()[1]}), Full(), std::vector<int64_t>{0, 1});
  }
  Value Float(const Value& i32) { return b_.Convert(i32, DType::Float32); }
  Value I(const Value& v, double c) { return b_.SplatLike(v, c); }

 private:
  Builder& b_;
  Value q_;
  int64_t e_;
};

Value AsInt8(Builder& b, const Value& u8) {
  return b.Emit("stablehlo.bitcast_convert", std::span(&u8, 1), {DType::Int8, u8.shape()});
}

struct Tables {
  std::vector<int64_t> idx, shift, mask;
  void Add(int64_t i, int64_t s, int64_t m) {
    idx.push_back(i);
    shift.push_back(s);
    mask.push_back(m);
  }
};

// q [R, blocks, bytes] u8 -> [R, blocks, E] f32.
Value Decode(Builder& b, BlockFormat format, const Value& q) {
  const BlockLayout layout = LayoutOf(format);
  Blocks k(b, q, layout.elements);
  switch (format) {
    case BlockFormat::F32: return k.F32(0);
    case BlockFormat::F16: return k.F16(0);
    case BlockFormat::BF16: return k.BF16(0);
    case BlockFormat::Q4_0:
    case BlockFormat::Q4_1: {
      const int64_t qs = format == BlockFormat::Q4_0 ? 2 : 4;
      Tables t;
      for (int j = 0; j < 32; ++j) t.Add(qs + j % 16, j < 16 ? 0 : 4, 15);
      const Value n = k.Bits(t.idx, t.shift, t.mask);
      const Value d = k.F16(0);
      if (format == BlockFormat::Q4_0) return b.Mul(k.Float(b.Sub(n, k.I(n, 8))), d);
      return b.Add(b.Mul(k.Float(n), d), k.F16(2));
    }
    case BlockFormat::Q5_0:
    case BlockFormat::Q5_1: {
      const int64_t qh = format == BlockFormat::Q5_0 ? 2 : 4, qs = qh + 4;
      Tables lo, hi;
      for (int j = 0; j < 32; ++j) {
        lo.Add(qs + j % 16, j < 16 ? 0 : 4, 15);
        hi.Add(qh + j / 8, j % 8, 1);
      }
      const Value h = k.Bits(hi.idx, hi.shift, hi.mask);
      const Value v = b.Binary("stablehlo.or", k.Bits(lo.idx, lo.shift, lo.mask),
                               b.Binary("stablehlo.shift_left", h, k.I(h, 4)));
      const Value d = k.F16(0);
      if (format == BlockFormat::Q5_0) return b.Mul(k.Float(b.Sub(v, k.I(v, 16))), d);
      return b.Add(b.Mul(k.Float(v), d), k.F16(2));
    }
    case BlockFormat::Q8_0:
    case BlockFormat::Q8_1: {
      const int64_t qs = format == BlockFormat::Q8_0 ? 2 : 4;
      std::vector<int64_t> idx;
      for (int j = 0; j < 32; ++j) idx.push_back(qs + j);
      const Value s = b.Convert(AsInt8(b, TakeConst(b, q, 2, idx)), DType::Float32);
      return b.Mul(s, k.F16(0));
    }
    case BlockFormat::Q8_K: {
      std::vector<int64_t> idx;
      for (int j = 0; j < 256; ++j) idx.push_back(4 + j);
      const Value s = b.Convert(AsInt8(b, TakeConst(b, q, 2, idx)), DType::Float32);
      return b.Mul(k.F32(0), s);
    }
    case BlockFormat::Q2_K: {
      Tables qv, sc;
      for (int n = 0; n < 2; ++n) {
        for (int j = 0; j < 4; ++j) {
          for (int half = 0; half < 2; ++half) {
            const int is = n * 8 + j * 2 + half;
            for (int l = 0; l < 16; ++l) {
              qv.Add(16 + 32 * n + l + 16 * half, 2 * j, 3);
              sc.Add(is, 0, 255);
            }
          }
        }
      }
      const Value s = k.Bits(sc.idx, sc.shift, sc.mask);
      const Value dl = b.Mul(k.F16(80), k.Float(And(b, s, k.I(s, 15))));
      const Value ml = b.Mul(k.F16(82), k.Float(ShiftRight(b, s, k.I(s, 4))));
      return b.Sub(b.Mul(dl, k.Float(k.Bits(qv.idx, qv.shift, qv.mask))), ml);
    }
    case BlockFormat::Q3_K: {
      Tables qv, hm, slo, shi;
      for (int n = 0; n < 2; ++n) {
        for (int j = 0; j < 4; ++j) {
          for (int half = 0; half < 2; ++half) {
            const int s = n * 8 + j * 2 + half;
            for (int l = 0; l < 16; ++l) {
              qv.Add(32 + 32 * n + l + 16 * half, 2 * j, 3);
              hm.Add(l + 16 * half, 4 * n + j, 1);
              slo.Add(96 + s % 8, 4 * (s / 8), 15);
              shi.Add(96 + 8 + s % 4, 2 * (s / 4), 3);
            }
          }
        }
      }
      const Value hi = k.Bits(shi.idx, shi.shift, shi.mask);
      const Value sc = b.Binary("stablehlo.or", k.Bits(slo.idx, slo.shift, slo.mask),
                                b.Binary("stablehlo.shift_left", hi, k.I(hi, 4)));
      const Value dl = b.Mul(k.F16(108), k.Float(b.Sub(sc, k.I(sc, 32))));
      const Value h = k.Bits(hm.idx, hm.shift, hm.mask);
      const Value value = b.Sub(k.Bits(qv.idx, qv.shift, qv.mask), b.Mul(b.Sub(k.I(h, 1), h), k.I(h, 4)));
      return b.Mul(dl, k.Float(value));
    }
    case BlockFormat::Q4_K:
    case BlockFormat::Q5_K: {
      const bool five = format == BlockFormat::Q5_K;
      const int64_t ql = five ? 48 : 16;
      // get_scale_min_k4(j): value = ((byte a >> sa) & ma) | (((byte b >> sb) & mb) << 4).
      Tables sa, sb, ma, mb, qv, qh;
      for (int e = 0; e < 256; ++e) {
        const int j = e / 32, c = e / 64, within = e % 64, l = within % 32;
        if (j < 4) {
          sa.Add(4 + j, 0, 63);
          sb.Add(4 + j, 0, 0);
          ma.Add(4 + j + 4, 0, 63);
          mb.Add(4 + j, 0, 0);
        } else {
          sa.Add(4 + j + 4, 0, 15);
          sb.Add(4 + j - 4, 6, 3);
          ma.Add(4 + j + 4, 4, 15);
          mb.Add(4 + j, 6, 3);
        }
        qv.Add(ql + 32 * c + l, within < 32 ? 0 : 4, 15);
        qh.Add(16 + l, j, 1);
      }
      auto six = [&](const Tables& a, const Tables& bb) {
        const Value h = k.Bits(bb.idx, bb.shift, bb.mask);
        return b.Binary("stablehlo.or", k.Bits(a.idx, a.shift, a.mask), b.Binary("stablehlo.shift_left", h, k.I(h, 4)));
      };
      const Value d1 = b.Mul(k.F16(0), k.Float(six(sa, sb)));
      const Value m1 = b.Mul(k.F16(2), k.Float(six(ma, mb)));
      Value v = k.Bits(qv.idx, qv.shift, qv.mask);
      if (five) {
        const Value h = k.Bits(qh.idx, qh.shift, qh.mask);
        v = b.Add(v, b.Mul(h, k.I(h, 16)));
      }
      return b.Sub(b.Mul(d1, k.Float(v)), m1);
    }
    case BlockFormat::Q6_K: {
      Tables lo, hi;
      std::vector<int64_t> sc;
      for (int e = 0; e < 256; ++e) {
        const int h = e / 128, within = e % 128, t = within / 32, l = within % 32;
        lo.Add(64 * h + l + 32 * (t % 2), 4 * (t / 2), 15);
        hi.Add(128 + 32 * h + l, 2 * t, 3);
        sc.push_back(192 + 8 * h + 2 * t + l / 16);
      }
      const Value hb = k.Bits(hi.idx, hi.shift, hi.mask);
      const Value qv = b.Sub(b.Binary("stablehlo.or", k.Bits(lo.idx, lo.shift, lo.mask),
                                      b.Binary("stablehlo.shift_left", hb, k.I(hb, 4))),
                             k.I(hb, 32));
      const Value s = b.Convert(AsInt8(b, TakeConst(b, q, 2, sc)), DType::Float32);
      return b.Mul(b.Mul(k.F16(208), s), k.Float(qv));
    }
  }
  throw Unlowerable(fmt::format("block format {} has no decoder", BlockFormatName(format)));
}

BlockFormat FormatOf(const LowerContext& ctx) { return *BlockFormatFromName(ctx.attrs().String("format")); }

// q [..., rowBytes] u8 -> [rows, values] f32.
Value DecodeRows(Builder& b, BlockFormat format, const Value& q) {
  const BlockLayout layout = LayoutOf(format);
  const int64_t row_bytes = q.shape().back();
  const int64_t rows = row_bytes == 0 ? 0 : NumElements(q.shape()) / row_bytes;
  const int64_t blocks = row_bytes / layout.bytes;
  const Value y = Decode(b, format, b.Reshape(q, {rows, blocks, layout.bytes}));
  return b.Reshape(y, {rows, blocks * layout.elements});
}

std::vector<Value> BlockDequantize(LowerContext& ctx, std::span<const Value> in) {
  const TensorType& out = ctx.out_type(0);
  if (NumElements(out.shape) == 0) return {ctx.b.Splat(out, 0.0)};
  return {ctx.b.Reshape(DecodeRows(ctx.b, FormatOf(ctx), in[0]), out.shape)};
}

std::vector<Value> BlockMatmul(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const TensorType& out = ctx.out_type(0);
  if (NumElements(out.shape) == 0) return {b.Splat(out, 0.0)};
  const int64_t k = in[0].shape().back();
  const int64_t rows = k == 0 ? 0 : NumElements(in[0].shape()) / k;
  if (k == 0) return {b.Splat(out, 0.0)};
  const Value w = F64(b, DecodeRows(b, FormatOf(ctx), in[1]));  // [out, in]
  const Value x = b.Reshape(F64(b, in[0]), {rows, k});
  const int64_t c1[] = {1};
  const Value y = b.DotGeneral(x, w, {}, {}, c1, c1, DType::Float64);
  return {b.Reshape(b.Convert(y, DType::Float32), out.shape)};
}

}  // namespace

void RegisterQuantLowerings(LoweringTable& t) {
  t.Add("quant.dequant_int8", DequantInt8);
  t.Add("quant.quantize_int8", QuantizeInt8);
  t.Add("quant.block_dequantize", BlockDequantize);
  t.Add("quant.block_matmul", BlockMatmul);
}

}  // namespace backplane::xla::nn
