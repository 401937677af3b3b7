// Scalar reference kernels of the PoolNd surface: max pooling (with argmax indices) over every
// real dtype and average pooling over the floats, on 1 to 3 spatial axes with dilation, begin/end
// padding, ceil mode and count_include_pad. Max compares values in their own type (f16/bf16
// widened exactly, integers exact); averages sum in double in tap order and round once.
// Semantics: docs/semantics/pool_nd.md.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "backplane/backend/pool_nd.hpp"
#include "cpu/reference/common.hpp"
#include "cpu/reference/elem.hpp"
#include "cpu/reference/pool_nd_geometry.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace pool_nd {
namespace {

void MaxPoolNd(const PoolNdConfig& config, const void* in, void* out, int64_t* indices, int64_t planes, DType dtype) {
  const Geometry g =
      BuildPoolNdGeometry("PoolNd.MaxPoolNd", config, in, out, indices, planes, dtype, kPoolNdMaxDTypes, true);
  // clang 14 cannot capture structured bindings in lambdas (P1091): plain references to them.
  const auto& [D_binding, H_binding, W_binding] = g.axes;
  const auto& D = D_binding;
  const auto& H = H_binding;
  const auto& W = W_binding;
  const auto& st = g.indexStride;
  elem::ByElem(dtype, [&](auto e) {
    using E = decltype(e);
    using V = typename E::Value;
    for (int64_t p = 0; p < planes; ++p) {
      const int64_t base = p * g.planeIn;
      const int64_t indexBase = config.IndicesOverTensor ? base : 0;
      int64_t at = p * g.planeOut;
      for (int64_t od = 0; od < D.out; ++od) {
        for (int64_t oh = 0; oh < H.out; ++oh) {
          for (int64_t ow = 0; ow < W.out; ++ow, ++at) {
            bool have = false;
            V best{};
            int64_t bestAt = 0;
            for (int64_t a = 0; a < D.Count(od); ++a) {
              const int64_t id = D.Taps(od)[a];
              for (int64_t b = 0; b < H.Count(oh); ++b) {
                const int64_t ih = H.Taps(oh)[b];
                for (int64_t c = 0; c < W.Count(ow); ++c) {
                  const int64_t iw = W.Taps(ow)[c];
                  const V v = E::Get(in, base + (id * H.in + ih) * W.in + iw);
                  bool wins = !have || v > best;
                  if constexpr (std::is_floating_point_v<V>) wins = wins || std::isnan(v);
                  if (wins) {
                    best = v;
                    bestAt = id * st[0] + ih * st[1] + iw * st[2];
                    have = true;
                  }
                }
              }
            }
            E::Put(out, at, best);
            if (indices != nullptr) indices[at] = indexBase + bestAt;
          }
        }
      }
    }
  });
}

void AvgPoolNd(const PoolNdConfig& config, const void* in, void* out, int64_t* indices, int64_t planes, DType dtype) {
  const Geometry g =
      BuildPoolNdGeometry("PoolNd.AvgPoolNd", config, in, out, indices, planes, dtype, kFloatDTypes, false);
  // clang 14 cannot capture structured bindings in lambdas (P1091): plain references to them.
  const auto& [D_binding, H_binding, W_binding] = g.axes;
  const auto& D = D_binding;
  const auto& H = H_binding;
  const auto& W = W_binding;
  for (int64_t p = 0; p < planes; ++p) {
    const int64_t base = p * g.planeIn;
    int64_t at = p * g.planeOut;
    for (int64_t od = 0; od < D.out; ++od) {
      for (int64_t oh = 0; oh < H.out; ++oh) {
        for (int64_t ow = 0; ow < W.out; ++ow, ++at) {
          double sum = 0.0;
          for (int64_t a = 0; a < D.Count(od); ++a) {
            for (int64_t b = 0; b < H.Count(oh); ++b) {
              const int64_t row = base + (D.Taps(od)[a] * H.in + H.Taps(oh)[b]) * W.in;
              for (int64_t c = 0; c < W.Count(ow); ++c) sum += Load<double>(in, row + W.Taps(ow)[c], dtype);
            }
          }
          const int64_t count = config.CountIncludePad
                                    ? D.padded[static_cast<size_t>(od)] * H.padded[static_cast<size_t>(oh)] *
                                          W.padded[static_cast<size_t>(ow)]
                                    : D.Count(od) * H.Count(oh) * W.Count(ow);
          StoreResult(out, at, dtype, sum / static_cast<double>(count));
        }
      }
    }
  }
}

}  // namespace
}  // namespace pool_nd

void RegisterPoolNd(KernelTable& table) {
  table.PoolNd_MaxPoolNd = &pool_nd::MaxPoolNd;
  table.PoolNd_AvgPoolNd = &pool_nd::AvgPoolNd;
}

}  // namespace backplane::cpu::ref
