// Stride-1 convolution without im2col (convolution_direct.cpp): register tiles of 6 output
// channels x 2 vectors of output positions read the taps straight from a zero-padded copy of the
// image. A padded plane is [Hp][Wp]; output (oh, ow) sits at p = oh * Wp + ow of the flattened
// plane and tap k at p + offsets[k], so a tile of consecutive p is one unaligned load per tap and
// vector (positions with ow >= outW are computed and dropped).
#pragma once

#include <cstddef>

namespace backplane::cpu::simd {

// Output channels per register tile; packed weights are [ceil(outC / 6)][K][6], zero padded.
constexpr size_t kDirectConvTileRows = 6;
// Elements a padded image must have past its last plane (the widest tile reads past the end).
constexpr size_t kDirectConvSlack = 256;

struct DirectConvShape {
  size_t outC = 0;
  size_t K = 0;                    // inC * taps
  const size_t* offsets = nullptr;  // K entries: tap k's offset in the padded image
  size_t kBlock = 0;               // taps summed per pass over y (whole channels; the rest of K after)
  size_t rowPitch = 0;             // Wp
  size_t planePitch = 0;           // Hp * Wp: output plane od starts at od * planePitch
  size_t outH = 0, outW = 0;       // output rows and columns per plane
  size_t outV = 0;                 // output elements per channel (outD * outH * outW)
};

// y[co][od][oh][ow] = bias[co] (0 without bias) + sum_k w[co][k] * padded[od * planePitch +
// oh * Wp + ow + offsets[k]] for output rows [oh0, oh1) of plane od; each output sums over k in
// order, whatever the rows asked. y is [outC][outV].
void DirectConvRowsF32(const DirectConvShape& s, const float* padded, const float* packedW, const float* bias,
                       float* y, size_t od, size_t oh0, size_t oh1);
void DirectConvRowsF64(const DirectConvShape& s, const double* padded, const double* packedW, const double* bias,
                       double* y, size_t od, size_t oh0, size_t oh1);

}  // namespace backplane::cpu::simd
