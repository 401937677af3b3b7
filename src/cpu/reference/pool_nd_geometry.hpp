// The windows of a PoolNd call, validated once and shared by the reference and the fast kernels.
// Every call is normalised to three spatial axes (d, h, w): a rank-r pool gets 3 - r leading axes
// of size 1 with a one-tap window. Per axis and output position: the input positions of the taps
// inside the input, in tap order, and the number of taps inside the padded extent.
#pragma once

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "backplane/backend/pool_nd.hpp"
#include "backplane/error.hpp"

namespace backplane::cpu::ref::pool_nd {

struct AxisWindows {
  int64_t in = 1, out = 1;
  std::vector<int64_t> first;   // [out + 1]: taps of window o are pos[first[o] .. first[o + 1])
  std::vector<int64_t> pos;     // input positions of the in-input taps
  std::vector<int64_t> padded;  // [out]: taps inside [-padBegin, in + padEnd)
  int64_t Count(int64_t o) const { return first[static_cast<size_t>(o) + 1] - first[static_cast<size_t>(o)]; }
  const int64_t* Taps(int64_t o) const { return pos.data() + first[static_cast<size_t>(o)]; }
};

struct Geometry {
  std::array<AxisWindows, 3> axes;
  int64_t planes = 0, planeIn = 0, planeOut = 0;  // elements per plane
  // Index offset strides of (d, h, w): row-major, or column-major (the first spatial axis fastest).
  std::array<int64_t, 3> indexStride{};
};

// Validates the config, dtype, sizes and pointers (throwing errors that name `op` and the argument)
// and returns the windows.
inline Geometry BuildPoolNdGeometry(std::string_view op, const PoolNdConfig& c, const void* in, const void* out,
                                    const int64_t* indices, int64_t planes, DType dtype, DTypeSet accepted,
                                    bool takesIndices) {
  CheckDType(op, "dtype", dtype, accepted);
  if (c.Rank < 1 || c.Rank > kPoolNdMaxRank) {
    ThrowInvalidArgument(op, "config.Rank", "1, 2 or 3", std::to_string(c.Rank));
  }
  CheckNonNegative(op, "planes", planes);
  if (!takesIndices && indices != nullptr) ThrowInvalidArgument(op, "indices", "nullptr (no indices)", "a pointer");
  Geometry g;
  g.planes = planes;
  constexpr int64_t kLimit = int64_t{1} << 40;  // keeps every product below in int64
  const int lead = kPoolNdMaxRank - c.Rank;
  for (int a = 0; a < kPoolNdMaxRank; ++a) {
    AxisWindows& w = g.axes[static_cast<size_t>(a)];
    if (a < lead) {
      w.first = {0, 1};
      w.pos = {0};
      w.padded = {1};
      continue;
    }
    const int i = a - lead;
    auto name = [&](const char* field) { return fmt::format("config.{}[{}]", field, i); };
    const int64_t k = c.Kernel[i], s = c.Stride[i], d = c.Dilation[i], pb = c.PadBegin[i], pe = c.PadEnd[i];
    CheckPositive(op, name("In"), c.In[i]);
    CheckPositive(op, name("Kernel"), k);
    CheckPositive(op, name("Stride"), s);
    CheckPositive(op, name("Dilation"), d);
    CheckNonNegative(op, name("PadBegin"), pb);
    CheckNonNegative(op, name("PadEnd"), pe);
    for (const auto& [field, v] : {std::pair{"In", c.In[i]}, {"Kernel", k}, {"Stride", s}, {"Dilation", d},
                                   {"PadBegin", pb}, {"PadEnd", pe}}) {
      if (v > kLimit) ThrowInvalidArgument(op, name(field), fmt::format("<= {}", kLimit), std::to_string(v));
    }
    if (k > (int64_t{1} << 20)) ThrowInvalidArgument(op, name("Kernel"), "<= 2^20", std::to_string(k));
    const int64_t expected = PoolNdExtent(c.In[i], k, s, d, pb, pe, c.CeilMode);
    if (expected < 0) {
      ThrowShapeMismatch(op, name("In"),
                         fmt::format(">= {} (the dilated window {} minus the pads {} + {})", d * (k - 1) + 1 - pb - pe,
                                     d * (k - 1) + 1, pb, pe),
                         std::to_string(c.In[i]));
    }
    if (c.Out[i] != expected) {
      ThrowShapeMismatch(op, name("Out"), fmt::format("{} (from In, the window and CeilMode)", expected),
                         std::to_string(c.Out[i]));
    }
    w.in = c.In[i];
    w.out = expected;
    w.first.assign(1, 0);
    for (int64_t o = 0; o < w.out; ++o) {
      int64_t padded = 0;
      for (int64_t t = 0; t < k; ++t) {
        const int64_t p = o * s - pb + t * d;
        if (p >= -pb && p < w.in + pe) ++padded;
        if (p >= 0 && p < w.in) w.pos.push_back(p);
      }
      if (static_cast<int64_t>(w.pos.size()) == w.first.back()) {
        ThrowInvalidArgument(op, name("PadBegin"),
                             fmt::format("pads that leave every window an input element (window {} of axis {} "
                                         "lies in the padding)", o, i),
                             fmt::format("{} and PadEnd {}", pb, pe));
      }
      w.first.push_back(static_cast<int64_t>(w.pos.size()));
      w.padded.push_back(padded);
    }
  }
  const auto& [D, H, W] = g.axes;
  g.planeIn = D.in * H.in * W.in;
  g.planeOut = D.out * H.out * W.out;
  int64_t total = 0;
  if (__builtin_mul_overflow(planes, g.planeIn, &total) || total > (int64_t{1} << 56)) {
    ThrowInvalidArgument(op, "planes", "small enough for the element count to fit in int64", std::to_string(planes));
  }
  if (c.ColumnMajorIndices) {
    g.indexStride = {1, D.in, D.in * H.in};
  } else {
    g.indexStride = {H.in * W.in, W.in, 1};
  }
  CheckPointer(op, "in", in, planes * g.planeIn);
  CheckPointer(op, "out", out, planes * g.planeOut);
  return g;
}

}  // namespace backplane::cpu::ref::pool_nd
