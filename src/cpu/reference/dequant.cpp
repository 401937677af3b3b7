// Scalar reference kernels for the Dequant surface (affine per-tensor dequantisation, as
// torch.Tensor.dequantize):
//   dst_i = (q_i - ZeroPoint) * Scale
// q_i - ZeroPoint is exact in int32; the product is one rounding in f32 (f32/f16/bf16 dst, then
// one more rounding to nearest even on a 16-bit store) or in f64 (f64 dst, Scale widened exactly).
// Dequant reads int8; Dequant4 reads int4, two per byte, low nibble first, sign-extended.
#include <fmt/format.h>

#include <cmath>

#include "cpu/reference/common.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace dequant {

namespace {

template <class LoadQ>
void Run(std::string_view op, void* dst, const void* src, int64_t count,
         const DequantConfig& config, DType dstFormat, DType srcFormat, DType expectedSrc,
         int zpMin, int zpMax, LoadQ loadQ) {
  CheckDType(op, "srcFormat", srcFormat, DTypeSet{expectedSrc});
  CheckDType(op, "dstFormat", dstFormat, kFloatDTypes);
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "dst", dst, count);
  CheckPointer(op, "src", src, count);
  if (!(std::isfinite(config.Scale) && config.Scale > 0.0f)) {
    ThrowInvalidArgument(op, "config.Scale", "finite and > 0", fmt::format("{}", config.Scale));
  }
  const int zp = config.ZeroPoint;
  if (zp < zpMin || zp > zpMax) {
    ThrowInvalidArgument(op, "config.ZeroPoint", fmt::format("in [{}, {}]", zpMin, zpMax),
                         std::to_string(zp));
  }
  WithComputeType(op, "dstFormat", dstFormat, [&](auto zero) {
    using T = decltype(zero);
    const T scale = static_cast<T>(config.Scale);
    for (int64_t i = 0; i < count; ++i) {
      const int32_t centred = int32_t{loadQ(src, i)} - zp;
      Store<T>(dst, i, dstFormat, static_cast<T>(centred) * scale);
    }
  });
}

}  // namespace

void Dequant(void* dst, const void* src, int64_t count, const DequantConfig& config,
             DType dstFormat, DType srcFormat) {
  Run("Dequant.Dequant", dst, src, count, config, dstFormat, srcFormat, DType::Int8, -128, 127,
      [](const void* q, int64_t i) { return static_cast<const int8_t*>(q)[i]; });
}

void Dequant4(void* dst, const void* src, int64_t count, const DequantConfig& config,
              DType dstFormat, DType srcFormat) {
  Run("Dequant.Dequant4", dst, src, count, config, dstFormat, srcFormat, DType::Int4, -8, 7,
      [](const void* q, int64_t i) { return LoadInt4(q, i); });
}

}  // namespace dequant

void RegisterDequant(KernelTable& table) {
  table.Dequant_Dequant = &dequant::Dequant;
  table.Dequant_Dequant4 = &dequant::Dequant4;
}

}  // namespace backplane::cpu::ref
