// Winograd F(2x2, 3x3) for f32 2-D convolutions with a 3x3 kernel, stride 1 and dilation 1
// (convolution_winograd.cpp): each 2x2 block of outputs is A^T [(G g G^T) . (B^T d B)] A over the
// 4x4 input tile d, so the 16 element-wise products summed over input channels are 16 GEMMs of
// [outC x inC] x [inC x tiles], 2.25x fewer multiplies than the direct sum.
//
// It needs finite inputs and weights of bounded size (an Inf in the tile would reach outputs whose
// window does not hold it, as Inf - Inf), which the caller checks (WinogradSafe).
#pragma once

#include <cstddef>

namespace backplane::cpu::simd {

// Padded image layout: channel ci is [2 * tilesH + 2][2 * tilesW + 2] (its image at the padding
// offset, zeros elsewhere), followed by kDirectConvSlack elements after the last channel.
struct WinogradShape {
  size_t inC = 0, outC = 0;
  size_t outH = 0, outW = 0;
  size_t tilesH = 0, tilesW = 0;  // ceil(out / 2)
  size_t rowPitch = 0;            // 2 * tilesW + 2
  size_t channelPitch = 0;        // (2 * tilesH + 2) * rowPitch
};

// Transformed weights U = G g G^T (computed in f64, rounded once), packed for the register tile:
// [16][ceil(outC / 6)][inC][6], zero padded. w is [outC][inC][3][3].
void WinogradPackWeights(const float* w, size_t outC, size_t inC, float* packed);
size_t WinogradPackedCount(size_t outC, size_t inC);

// y[co][oh][ow] (y is [outC][outH][outW]) = bias[co] (0 without bias) + the convolution, for the
// outputs of tile rows [th0, th1).
void WinogradRowsF32(const WinogradShape& s, const float* padded, const float* packedU, const float* bias, float* y,
                     size_t th0, size_t th1);

// The largest |x[i]|, or +Inf when some x[i] is NaN or infinite; copies x to copy unless null.
float CopyMaxAbsF32(const float* x, float* copy, size_t n);

}  // namespace backplane::cpu::simd
