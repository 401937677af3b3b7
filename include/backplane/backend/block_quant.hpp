// Backend surface BlockQuant (2 methods): ggml's block-quantised formats (block_format.hpp).
// Semantics: docs/semantics/block_quant.md.
//   Dequantize: dst[i] = value i of the `count` values stored in `src` (count a multiple of the
//               block size of srcFormat), exactly as ggml's dequantize_row_* computes it.
//   MatmulT:    dst[r, o] = sum_i x[r, i] * W[o, i], W = dequantised `weights`, an
//               [outFeatures, inFeatures] row-major matrix whose rows are whole blocks of
//               weightFormat. The weights are never expanded to f32 as a whole.
#pragma once

#include <cstdint>

#include "backplane/backend/families.hpp"
#include "backplane/block_format.hpp"
#include "backplane/dtype.hpp"

namespace backplane {

// X(Surface, Method, Family, accepted DTypes)
#define BP_SURFACE_BLOCK_QUANT(X) \
  X(BlockQuant, Dequantize, BlockDequant, DTypeSet{DType::Float32}) \
  X(BlockQuant, MatmulT, BlockMatmul, DTypeSet{DType::Float32})

class BlockQuantSurface {
 public:
  virtual ~BlockQuantSurface() = default;
#define BP_DECLARE_PURE(S, M, F, D) virtual BP_RET_##F M(BP_PARAMS_##F) = 0;
  BP_SURFACE_BLOCK_QUANT(BP_DECLARE_PURE)
#undef BP_DECLARE_PURE
};

}  // namespace backplane
