// Graph-level lowerings of sampling.* and quant.*.
//
// sampling.greedy|top_k|top_p: logits [V] or [B, V] -> int32 token ids [] or [B]. Each row is one
// independent draw; row b uses seed + b (as a 64-bit two's-complement pattern), so a batch of one
// row matches the Backend method called with `seed`.
// quant.quantize_int8: float x -> int8 q; quant.dequant_int8 / dequant_int4: int8 / int4 q -> f32 y.
// All keep the input's shape.
// quant.block_dequantize: u8 q [..., rowBytes] holding ggml blocks of `format` -> f32 y [..., n].
// quant.block_matmul: f32 x [..., in], u8 w [out, rowBytes(in)] -> f32 y [..., out] = x W^T.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>

#include "runtime/ops/lowering.hpp"
#include "runtime/ops/ops.hpp"

namespace backplane::runtime::ops {
namespace {

using Types = std::vector<TensorType>;

// ---- sampling --------------------------------------------------------------------------------------
enum class Method { Greedy, TopK, TopP };

// The sampler's attributes, range-checked; row `row` draws with seed + row.
SamplingConfig Config(const Attrs& attrs, Method method, int64_t row) {
  SamplingConfig config;
  if (method == Method::Greedy) return config;
  const double t = attrs.Float("temperature");
  if (!std::isfinite(static_cast<float>(t)) || t < 0) {
    attrs.Fail("temperature", "finite and >= 0 (0 is greedy)", fmt::format("{}", t));
  }
  config.Temperature = static_cast<float>(t);
  config.Seed = static_cast<uint64_t>(attrs.Int("seed")) + static_cast<uint64_t>(row);
  if (method == Method::TopK) {
    config.TopK = attrs.Int("top_k");
    if (config.TopK < 0) attrs.Fail("top_k", ">= 0 (0 is the whole vocabulary)", std::to_string(config.TopK));
  } else {
    const double p = attrs.Float("top_p");
    if (!(p > 0 && p <= 1)) attrs.Fail("top_p", "in (0, 1]", fmt::format("{}", p));
    config.TopP = static_cast<float>(p);
  }
  return config;
}

int32_t SampleRow(SamplingSurface& s, Method method, const SamplingConfig& config, const void* logits, int64_t vocab,
                  DType d) {
  switch (method) {
    case Method::Greedy: return s.GreedySample(logits, vocab, d);
    case Method::TopK: return s.TopKSample(config, logits, vocab, d);
    case Method::TopP: return s.TopPSample(config, logits, vocab, d);
  }
  return 0;
}

OpImpl Sampler(Method method) {
  return OpImpl{
      [method](std::span<const TensorType> in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, kFloatDTypes);
        const Shape& s = in[0].shape;
        if (s.size() != 1 && s.size() != 2) {
          Fail(attrs, ErrorCode::ShapeMismatch, fmt::format("logits must be [V] or [B, V], got {}", ShapeToString(s)));
        }
        if (s.back() < 1) Fail(attrs, ErrorCode::ShapeMismatch, "the vocabulary (last dimension) must not be empty");
        Config(attrs, method, 0);
        return Types{{DType::Int32, s.size() == 2 ? Shape{s[0]} : Shape{}}};
      },
      [method](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const Tensor& logits = in[0];
        const int64_t vocab = logits.shape().back();
        const size_t row_bytes = DTypeStorageBytes(logits.dtype(), vocab);
        for (int64_t row = 0; row < out[0].numel(); ++row) {
          const void* data = static_cast<const char*>(logits.data()) + static_cast<size_t>(row) * row_bytes;
          out[0].data_as<int32_t>()[row] = SampleRow(ctx.backend.Sampling(), method, Config(ctx.attrs, method, row),
                                                     data, vocab, logits.dtype());
        }
      }};
}

// ---- quant -----------------------------------------------------------------------------------------
// scale (finite, > 0) and zero_point (in [lo, hi]) checked.
void CheckScaleZero(const Attrs& attrs, int64_t lo, int64_t hi) {
  const double scale = attrs.Float("scale");
  if (!std::isfinite(static_cast<float>(scale)) || !(static_cast<float>(scale) > 0)) {
    attrs.Fail("scale", "finite and > 0", fmt::format("{}", scale));
  }
  const int64_t zero = attrs.Int("zero_point");
  if (zero < lo || zero > hi) attrs.Fail("zero_point", fmt::format("in [{}, {}]", lo, hi), std::to_string(zero));
}

float Scale(const Attrs& attrs) { return static_cast<float>(attrs.Float("scale")); }
int8_t ZeroPoint(const Attrs& attrs) { return static_cast<int8_t>(attrs.Int("zero_point")); }

// float x -> int8 q.
OpImpl QuantizeInt8() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, kFloatDTypes);
        CheckScaleZero(attrs, INT8_MIN, INT8_MAX);
        return Types{{DType::Int8, in[0].shape}};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const QuantConfig config{Scale(ctx.attrs), ZeroPoint(ctx.attrs)};
        ctx.backend.Quant().Quant(out[0].data(), in[0].data(), in[0].numel(), config, DType::Int8, in[0].dtype());
      }};
}

// int8 or int4 q -> f32 y.
OpImpl Dequantize(DType source, void (DequantSurface::*method)(BP_PARAMS_Dequant), int64_t lo, int64_t hi) {
  return OpImpl{
      [source, lo, hi](std::span<const TensorType> in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, DTypeSet{source});
        CheckScaleZero(attrs, lo, hi);
        return Types{{DType::Float32, in[0].shape}};
      },
      [source, method](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const DequantConfig config{Scale(ctx.attrs), ZeroPoint(ctx.attrs)};
        (ctx.backend.Dequant().*method)(out[0].data(), in[0].data(), in[0].numel(), config, DType::Float32, source);
      }};
}

BlockFormat FormatAttr(const Attrs& attrs) {
  const std::string& name = attrs.String("format");
  const auto format = BlockFormatFromName(name);
  if (!format) attrs.Fail("format", "a ggml block format (f32, f16, bf16, q4_0 .. q8_1, q2_k .. q8_k)", name);
  return *format;
}

// Values per row of `rowBytes` bytes of `format`, or a failure naming the attribute.
int64_t RowValues(const Attrs& attrs, BlockFormat format, int64_t rowBytes) {
  const BlockLayout layout = LayoutOf(format);
  if (rowBytes % layout.bytes != 0) {
    Fail(attrs, ErrorCode::ShapeMismatch,
         fmt::format("the last dimension of w ({} bytes) must be a whole number of {}-byte {} blocks", rowBytes,
                     layout.bytes, BlockFormatName(format)));
  }
  return rowBytes / layout.bytes * layout.elements;
}

OpImpl BlockDequantize() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, DTypeSet{DType::Uint8});
        if (in[0].shape.empty()) Fail(attrs, ErrorCode::ShapeMismatch, "q must have rank >= 1 (rows of blocks)");
        Shape shape = in[0].shape;
        shape.back() = RowValues(attrs, FormatAttr(attrs), shape.back());
        return Types{{DType::Float32, shape}};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        ctx.backend.BlockQuant().Dequantize(out[0].data(), in[0].data(), out[0].numel(), FormatAttr(ctx.attrs),
                                            DType::Float32);
      }};
}

OpImpl BlockMatmul() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, DTypeSet{DType::Float32});
        ExpectDType(attrs, in, 1, DTypeSet{DType::Uint8});
        const Shape& x = in[0].shape;
        const Shape& w = in[1].shape;
        if (x.empty() || w.size() != 2) {
          Fail(attrs, ErrorCode::ShapeMismatch,
               fmt::format("x must be [..., in] and w [out, rowBytes], got {} and {}", ShapeToString(x),
                           ShapeToString(w)));
        }
        const BlockFormat format = FormatAttr(attrs);
        if (RowValues(attrs, format, w[1]) != x.back()) {
          Fail(attrs, ErrorCode::ShapeMismatch,
               fmt::format("w rows hold {} {} values, x's last dimension is {}", RowValues(attrs, format, w[1]),
                           BlockFormatName(format), x.back()));
        }
        Shape shape = x;
        shape.back() = w[0];
        return Types{{DType::Float32, shape}};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const int64_t inFeatures = in[0].shape().back();
        const int64_t rows = inFeatures == 0 ? 0 : in[0].numel() / inFeatures;
        ctx.backend.BlockQuant().MatmulT(out[0].data(), in[0].data(), in[1].data(), rows, in[1].shape()[0],
                                         inFeatures, FormatAttr(ctx.attrs), DType::Float32);
      }};
}

}  // namespace

void RegisterSamplingQuantOps(OpRegistry& r) {
  r.Add("sampling.greedy", Sampler(Method::Greedy));
  r.Add("sampling.top_k", Sampler(Method::TopK));
  r.Add("sampling.top_p", Sampler(Method::TopP));

  r.Add("quant.quantize_int8", QuantizeInt8());
  r.Add("quant.dequant_int8", Dequantize(DType::Int8, &DequantSurface::Dequant, INT8_MIN, INT8_MAX));
  r.Add("quant.dequant_int4", Dequantize(DType::Int4, &DequantSurface::Dequant4, -8, 7));
  r.Add("quant.block_dequantize", BlockDequantize());
  r.Add("quant.block_matmul", BlockMatmul());
}

}  // namespace backplane::runtime::ops
