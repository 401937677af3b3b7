// Fast kernels for the Convolution surface: Conv1D, Conv2D, Conv3D and ConvTranspose2D (GEMM +
// col2im), NCL / NCHW / NCDHW.
//
// Forward with every stride 1 (and a kernel other than 1x1 unpadded): the direct register tiles
// of convolution_direct.hpp over a zero-padded copy of each image, no im2col. 1x1 unpadded: one
// GEMM on the image itself. Other strides: per image, the columns col[ci, k...][o...] hold the input tap each output reads (0 where
// the tap falls in the padding), then out[n] = W[Cout, Cin*k...] * col + bias on the own packed
// f32 GEMM (BLAS with BACKPLANE_GEMM=openblas; f16 and bf16 widened to f32 and narrowed once with
// round-to-nearest-even) or cblas_dgemm for f64. The padding zeros take part in the products, so where a weight is
// non-finite (0 * Inf = NaN, which the reference never computes: it skips padded taps) the
// outputs whose window touches the padding are recomputed exactly, in f64 over the in-bounds taps.
// Transposed: cols[co, kh, kw][ih, iw] = sum_ci W[ci, co, kh, kw] * in[n, ci, ih, iw] (one GEMM),
// then every column entry is added to the output position it lands on (entries landing outside
// the output are dropped, as the reference never forms them).
// Results differ from the reference (one f64 accumulator per output) by summation order and
// precision only; the conformance runner checks them against the GEMM bound
// tol.rel * (|bias| + sum |x||w|) + tol.abs. Invalid arguments go to the reference, which throws,
// before anything is written; outputs that overlap an input are computed aside and copied.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/convolution.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "cpu/kernels/convert-inl.h"

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// row[i] = value for n elements (bias broadcast), f32 or f64.
template <class T>
void FillRow(T* row, size_t n, T value) {
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d);
  const auto v = hn::Set(d, value);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(v, d, row + i);
  for (; i < n; ++i) row[i] = value;
}
void FillRowF32(float* row, size_t n, float value) { FillRow(row, n, value); }
void FillRowF64(double* row, size_t n, double value) { FillRow(row, n, value); }

}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <cblas.h>
#include <hwy/aligned_allocator.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

#include "backplane/cpu/conv_path.hpp"
#include "backplane/cpu/gemm_path.hpp"
#include "backplane/cpu/threads.hpp"
#include "cpu/kernels/convolution_direct.hpp"
#include "cpu/kernels/convolution_winograd.hpp"
#include "cpu/kernels/own_gemm.hpp"
#include "cpu/kernels/serial_blas.hpp"
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {
HWY_EXPORT(WidenBlock);
HWY_EXPORT(NarrowBlock);
HWY_EXPORT(FillRowF32);
HWY_EXPORT(FillRowF64);

namespace {

bool MulOk(int64_t a, int64_t b, int64_t* r) { return !__builtin_mul_overflow(a, b, r); }
bool AddOk(int64_t a, int64_t b, int64_t* r) { return !__builtin_add_overflow(a, b, r); }

bool Floating(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
}

// One spatial axis; conv as 3-D with leading unit axes (in = out = kernel = 1).
struct Axis {
  int64_t in = 1, kernel = 1, out = 1, stride = 1, padding = 0, dilation = 1;
};
using Axes = std::array<Axis, 3>;

// The reference's per-axis checks (config, kernel > 0, output extent), without throwing.
bool AxisOk(const Axis& a, bool transposed) {
  if (a.in < 0 || a.kernel <= 0 || a.out < 0 || a.stride <= 0 || a.padding < 0 || a.dilation <= 0)
    return false;
  int64_t span = 0;
  if (!MulOk(a.dilation, a.kernel - 1, &span)) return false;
  if (!transposed) {
    int64_t expected = 0;
    if (a.in > 0) {
      int64_t twoPad = 0, padded = 0;
      if (!MulOk(2, a.padding, &twoPad) || !AddOk(a.in, twoPad, &padded) || padded <= span)
        return false;
      expected = (padded - span - 1) / a.stride + 1;
    }
    return a.out == expected;
  }
  if (a.in == 0) return a.out == 0;
  int64_t grown = 0, shrink = 0, base = 0, highest = 0;
  if (!MulOk(a.in - 1, a.stride, &grown) || !MulOk(2, a.padding, &shrink) ||
      !AddOk(grown - shrink, 1, &base) || !AddOk(base, span, &base) ||
      !AddOk(base, std::max(a.stride, a.dilation) - 1, &highest)) {
    return false;
  }
  return a.out >= std::max<int64_t>(base, 1) && a.out <= highest;
}

struct Plan {
  int64_t inV = 1, kV = 1, outV = 1;
  int64_t inCount = 0, weightCount = 0, outCount = 0;
};

bool Validate(const Axes& axes, bool transposed, const void* in, const void* weight,
              const void* out, int64_t batch, int64_t inC, int64_t outC, DType dtype, Plan* p) {
  if (!Floating(dtype) || batch < 0 || inC < 0 || outC < 0) return false;
  for (const Axis& a : axes) {
    if (!AxisOk(a, transposed) || !MulOk(p->inV, a.in, &p->inV) ||
        !MulOk(p->kV, a.kernel, &p->kV) || !MulOk(p->outV, a.out, &p->outV)) {
      return false;
    }
  }
  int64_t t = 0;
  if (!MulOk(batch, inC, &t) || !MulOk(t, p->inV, &p->inCount) || !MulOk(outC, inC, &t) ||
      !MulOk(t, p->kV, &p->weightCount) || !MulOk(batch, outC, &t) ||
      !MulOk(t, p->outV, &p->outCount)) {
    return false;
  }
  if ((p->inCount > 0 && !in) || (p->weightCount > 0 && !weight) || (p->outCount > 0 && !out))
    return false;
  // BLAS takes int sizes.
  int64_t k = 0, m = 0;
  return MulOk(inC, p->kV, &k) && k <= INT_MAX && MulOk(outC, p->kV, &m) && m <= INT_MAX &&
         p->outV <= INT_MAX && p->inV <= INT_MAX;
}

bool Overlaps(const void* a, size_t abytes, const void* b, size_t bbytes) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return a && b && abytes > 0 && bbytes > 0 && x < y + bbytes && y < x + abytes;
}

// C[m x n] += op(A) * B, row-major with leading dimensions ldb and ldc; transA: A is stored
// [k x m]. f32 A * B with at least kOwnGemmMinRows rows runs on the own packed GEMM (unless
// BACKPLANE_GEMM=openblas); the rest on BLAS in blocks of 2048 columns (or 256 rows), on our pool
// when the product is large. threads = false: the caller already runs in parallel.
template <class T>
void Gemm(bool transA, int m, int n, int k, const T* a, const T* b, int ldb, T* c, int ldc, bool threads) {
  if constexpr (std::is_same_v<T, float>) {
    if (!transA && static_cast<size_t>(m) >= kOwnGemmMinRows && CurrentGemmPath() == GemmPath::Own) {
      return OwnGemmF32(a, static_cast<size_t>(k), b, static_cast<size_t>(ldb), c, static_cast<size_t>(ldc),
                        static_cast<size_t>(m), static_cast<size_t>(k), static_cast<size_t>(n), true, threads);
    }
  }
  const auto ta = transA ? CblasTrans : CblasNoTrans;
  const int lda = transA ? m : k;
  constexpr int kRows = 256, kCols = 2048;
  const bool byCols = n >= 2 * kCols, byRows = !byCols && m >= 2 * kRows;
  const int blocks = byCols ? (n + kCols - 1) / kCols : byRows ? (m + kRows - 1) / kRows : 1;
  SerialBlas serial;
  auto run = [&](int64_t b0, int64_t b1) {
    for (int64_t blk = b0; blk < b1; ++blk) {
      int r0 = 0, nr = m, j0 = 0, nc = n;
      if (byCols) {
        j0 = static_cast<int>(blk) * kCols;
        nc = std::min(kCols, n - j0);
      } else if (byRows) {
        r0 = static_cast<int>(blk) * kRows;
        nr = std::min(kRows, m - r0);
      }
      const T* ab = transA ? a + r0 : a + static_cast<int64_t>(r0) * k;
      T* cb = c + static_cast<int64_t>(r0) * ldc + j0;
      if constexpr (std::is_same_v<T, float>) {
        cblas_sgemm(CblasRowMajor, ta, CblasNoTrans, nr, nc, k, 1.0f, ab, lda, b + j0, ldb, 1.0f,
                    cb, ldc);
      } else {
        cblas_dgemm(CblasRowMajor, ta, CblasNoTrans, nr, nc, k, 1.0, ab, lda, b + j0, ldb, 1.0, cb,
                    ldc);
      }
    }
  };
  if (threads && blocks > 1 && static_cast<double>(m) * n * k >= 1e7) {
    ParallelFor(blocks, 1, run);
  } else {
    run(0, blocks);
  }
}

template <class T>
void FillRow(T* row, size_t n, T value) {
  if constexpr (std::is_same_v<T, float>) {
    HWY_DYNAMIC_DISPATCH(FillRowF32)(row, n, value);
  } else {
    HWY_DYNAMIC_DISPATCH(FillRowF64)(row, n, value);
  }
}

// The operands in the compute type T (f32 for f32/f16/bf16, f64 for f64): the storage itself when
// it already is T, else a widened copy.
template <class T>
struct Widened {
  std::vector<T> copy;
  const T* data = nullptr;
  void From(const void* src, int64_t count, DType dtype) {
    if (!src || count == 0) return;
    if (dtype == DType::Float32 || dtype == DType::Float64) {
      data = static_cast<const T*>(src);
      return;
    }
    copy.resize(static_cast<size_t>(count));
    if constexpr (std::is_same_v<T, float>) {
      HWY_DYNAMIC_DISPATCH(WidenBlock)
      (static_cast<const uint16_t*>(src), copy.data(), copy.size(), dtype == DType::BFloat16);
    }
    data = copy.data();
  }
};

// Writes y (T, count elements) to the output storage.
template <class T>
void StoreOut(const T* y, void* out, int64_t offset, int64_t count, DType dtype) {
  if (dtype == DType::Float32 || dtype == DType::Float64) {
    T* dst = static_cast<T*>(out) + offset;
    if (dst != y) std::memcpy(dst, y, static_cast<size_t>(count) * sizeof(T));
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    HWY_DYNAMIC_DISPATCH(NarrowBlock)
    (y, static_cast<uint16_t*>(out) + offset, static_cast<size_t>(count), dtype == DType::BFloat16);
  }
}

// First and one-past-last output o along an axis whose tap k lands inside the input:
// 0 <= o*s - p + k*d < in.
void TapRange(const Axis& a, int64_t k, int64_t* lo, int64_t* hi) {
  const int64_t off = k * a.dilation - a.padding;  // i = o*s + off
  *lo = off >= 0 ? 0 : (-off + a.stride - 1) / a.stride;
  *hi = a.in - off <= 0 ? 0 : std::min(a.out, (a.in - off - 1) / a.stride + 1);
  if (*hi < *lo) *hi = *lo;
}

// col[(ci, kd, kh, kw)][(od, oh, ow)] for one image x [inC][inV], for the output rows (od, oh)
// flattened in [r0, r1): col has (r1 - r0) * outW columns.
template <class T>
void Im2Col(const Axes& ax, const T* x, int64_t inC, int64_t r0, int64_t r1, T* col) {
  const Axis &D = ax[0], &H = ax[1], &W = ax[2];
  const int64_t width = (r1 - r0) * W.out;
  int64_t row = 0;
  for (int64_t ci = 0; ci < inC; ++ci) {
    const T* plane = x + ci * D.in * H.in * W.in;
    for (int64_t kd = 0; kd < D.kernel; ++kd) {
      for (int64_t kh = 0; kh < H.kernel; ++kh) {
        for (int64_t kw = 0; kw < W.kernel; ++kw, ++row) {
          T* dst = col + row * width;
          int64_t wlo = 0, whi = 0;
          TapRange(W, kw, &wlo, &whi);
          const int64_t woff = kw * W.dilation - W.padding;
          for (int64_t r = r0; r < r1; ++r, dst += W.out) {
            const int64_t od = r / H.out, oh = r % H.out;
            const int64_t id = od * D.stride - D.padding + kd * D.dilation;
            const int64_t ih = oh * H.stride - H.padding + kh * H.dilation;
            if (id < 0 || id >= D.in || ih < 0 || ih >= H.in) {
              std::fill(dst, dst + W.out, T(0));
              continue;
            }
            const T* src =
                plane + (id * H.in + ih) * W.in;  // input column of output ow: ow*s + woff
            std::fill(dst, dst + wlo, T(0));
            if (W.stride == 1) {
              std::memcpy(dst + wlo, src + wlo + woff, static_cast<size_t>(whi - wlo) * sizeof(T));
            } else {
              for (int64_t ow = wlo; ow < whi; ++ow) dst[ow] = src[ow * W.stride + woff];
            }
            std::fill(dst + whi, dst + W.out, T(0));
          }
        }
      }
    }
  }
}

// Outputs of channel co whose window reaches the padding, recomputed like the reference (f64,
// bias first, in-bounds taps only). Used where a weight of co is non-finite.
template <class T>
void ExactBorder(const Axes& ax, const T* x, const T* w, const T* bias, int64_t inC, int64_t co,
                 T* y) {
  std::array<std::vector<bool>, 3> border;
  for (size_t r = 0; r < 3; ++r) {
    const Axis& a = ax[r];
    border[r].assign(static_cast<size_t>(a.out), false);
    for (int64_t o = 0; o < a.out; ++o) {
      const int64_t first = o * a.stride - a.padding, last = first + (a.kernel - 1) * a.dilation;
      border[r][static_cast<size_t>(o)] = first < 0 || last >= a.in;
    }
  }
  const Axis &D = ax[0], &H = ax[1], &W = ax[2];
  const int64_t inV = D.in * H.in * W.in, kV = D.kernel * H.kernel * W.kernel;
  for (int64_t od = 0; od < D.out; ++od) {
    for (int64_t oh = 0; oh < H.out; ++oh) {
      for (int64_t ow = 0; ow < W.out; ++ow) {
        if (!border[0][static_cast<size_t>(od)] && !border[1][static_cast<size_t>(oh)] &&
            !border[2][static_cast<size_t>(ow)]) {
          continue;
        }
        double acc = bias ? static_cast<double>(bias[co]) : 0.0;
        for (int64_t ci = 0; ci < inC; ++ci) {
          const T* plane = x + ci * inV;
          const T* filter = w + (co * inC + ci) * kV;
          for (int64_t kd = 0; kd < D.kernel; ++kd) {
            const int64_t id = od * D.stride + kd * D.dilation - D.padding;
            if (id < 0 || id >= D.in) continue;
            for (int64_t kh = 0; kh < H.kernel; ++kh) {
              const int64_t ih = oh * H.stride + kh * H.dilation - H.padding;
              if (ih < 0 || ih >= H.in) continue;
              for (int64_t kw = 0; kw < W.kernel; ++kw) {
                const int64_t iw = ow * W.stride + kw * W.dilation - W.padding;
                if (iw < 0 || iw >= W.in) continue;
                acc += static_cast<double>(plane[(id * H.in + ih) * W.in + iw]) *
                       static_cast<double>(filter[(kd * H.kernel + kh) * W.kernel + kw]);
              }
            }
          }
        }
        // Rounded through f32 for f32/f16/bf16, as the reference's store.
        y[(co * D.out + od) * H.out * W.out + oh * W.out + ow] = static_cast<T>(acc);
      }
    }
  }
}

// Stride-1 forward convolution on the direct tiles (convolution_direct.hpp): the padded image
// geometry, tap offsets and the weights packed into 6-channel panels, built once per call.
template <class T>
struct DirectPlan {
  DirectConvShape shape;
  std::vector<size_t> offsets;
  hwy::AlignedFreeUniquePtr<T[]> packed;
  std::array<int64_t, 3> padded{};  // Dp, Hp, Wp
  int64_t channelPitch = 0, paddedCount = 0;

  // False where the padded image would be much larger than the image (huge padding or dilation):
  // those stay on im2col.
  bool Build(const Axes& ax, const Plan& p, const T* w, int64_t inC, int64_t outC) {
    int64_t pitch = 1;
    for (size_t r = 0; r < 3; ++r) {
      int64_t twoPad = 0;
      if (!MulOk(2, ax[r].padding, &twoPad) || !AddOk(ax[r].in, twoPad, &padded[r]) ||
          !MulOk(pitch, padded[r], &pitch)) {
        return false;
      }
    }
    channelPitch = pitch;
    if (!MulOk(inC, channelPitch, &paddedCount) || paddedCount > 4 * inC * p.inV + (int64_t{1} << 16)) return false;
    const Axis &D = ax[0], &H = ax[1], &W = ax[2];
    const int64_t Hp = padded[1], Wp = padded[2], K = inC * p.kV;
    offsets.resize(static_cast<size_t>(K));
    size_t k = 0;
    for (int64_t ci = 0; ci < inC; ++ci)
      for (int64_t kd = 0; kd < D.kernel; ++kd)
        for (int64_t kh = 0; kh < H.kernel; ++kh)
          for (int64_t kw = 0; kw < W.kernel; ++kw) {
            offsets[k++] = static_cast<size_t>(ci * channelPitch + (kd * D.dilation * Hp + kh * H.dilation) * Wp +
                                               kw * W.dilation);
          }
    const size_t tiles = (static_cast<size_t>(outC) + kDirectConvTileRows - 1) / kDirectConvTileRows;
    packed = hwy::AllocateAligned<T>(tiles * static_cast<size_t>(K) * kDirectConvTileRows);
    for (size_t t = 0; t < tiles; ++t) {
      for (size_t kk = 0; kk < static_cast<size_t>(K); ++kk) {
        for (size_t r = 0; r < kDirectConvTileRows; ++r) {
          const size_t co = t * kDirectConvTileRows + r;
          packed[(t * static_cast<size_t>(K) + kk) * kDirectConvTileRows + r] =
              co < static_cast<size_t>(outC) ? w[co * static_cast<size_t>(K) + kk] : T(0);
        }
      }
    }
    // K blocks of whole channels whose rows for one tile (32 lanes nominal) fill about 32 KiB.
    const int64_t bytesPerChannel =
        D.kernel * H.kernel * (32 + (W.kernel - 1) * W.dilation) * static_cast<int64_t>(sizeof(T));
    const int64_t blockChannels = std::clamp<int64_t>((32 << 10) / std::max<int64_t>(bytesPerChannel, 1), 1,
                                                      std::max<int64_t>(inC, 1));
    shape = DirectConvShape{.outC = static_cast<size_t>(outC),
                            .K = static_cast<size_t>(K),
                            .offsets = offsets.data(),
                            .kBlock = static_cast<size_t>(blockChannels * p.kV),
                            .rowPitch = static_cast<size_t>(Wp),
                            .planePitch = static_cast<size_t>(Hp * Wp),
                            .outH = static_cast<size_t>(H.out),
                            .outW = static_cast<size_t>(W.out),
                            .outV = static_cast<size_t>(p.outV)};
    return true;
  }

  // A zero-filled padded image, slack included.
  std::vector<T> Buffer() const {
    return std::vector<T>(static_cast<size_t>(paddedCount) + kDirectConvSlack, T(0));
  }

  // Copies image x [inC][inV] into the interior of buf (its borders stay zero).
  void Fill(const Axes& ax, const T* x, int64_t inC, T* buf) const {
    const Axis &D = ax[0], &H = ax[1], &W = ax[2];
    const int64_t Hp = padded[1], Wp = padded[2];
    for (int64_t ci = 0; ci < inC; ++ci) {
      for (int64_t id = 0; id < D.in; ++id) {
        for (int64_t ih = 0; ih < H.in; ++ih) {
          const T* src = x + ((ci * D.in + id) * H.in + ih) * W.in;
          T* dst = buf + ci * channelPitch + ((id + D.padding) * Hp + ih + H.padding) * Wp + W.padding;
          std::memcpy(dst, src, static_cast<size_t>(W.in) * sizeof(T));
        }
      }
    }
  }

  void Rows(const T* buf, const T* bias, T* y, int64_t od, int64_t oh0, int64_t oh1) const {
    if constexpr (std::is_same_v<T, float>) {
      DirectConvRowsF32(shape, buf, packed.get(), bias, y, static_cast<size_t>(od), static_cast<size_t>(oh0),
                        static_cast<size_t>(oh1));
    } else {
      DirectConvRowsF64(shape, buf, packed.get(), bias, y, static_cast<size_t>(od), static_cast<size_t>(oh0),
                        static_cast<size_t>(oh1));
    }
  }
};

// Winograd F(2x2, 3x3) (convolution_winograd.hpp) for f32 compute: 3x3, stride 1, dilation 1,
// 2-D, at least 16 channels in and out, finite weights; each image is checked (Fill) before it
// takes this path.
struct WinogradPlan {
  WinogradShape shape;
  hwy::AlignedFreeUniquePtr<float[]> packed;
  int64_t padH = 0, padW = 0, inH = 0, inW = 0, count = 0;
  double maxW = 0, inC = 0;

  bool Build(const Axes& ax, const float* w, int64_t inChannels, int64_t outC) {
    const Axis &D = ax[0], &H = ax[1], &W = ax[2];
    if (CurrentConvPath() != ConvPath::Winograd || D.in != 1 || D.kernel != 1 || D.out != 1 || H.kernel != 3 ||
        W.kernel != 3 || H.stride != 1 || W.stride != 1 || H.dilation != 1 || W.dilation != 1 || inChannels < 16 ||
        outC < 16 || H.out < 2 || W.out < 2) {
      return false;
    }
    const size_t tilesH = static_cast<size_t>((H.out + 1) / 2), tilesW = static_cast<size_t>((W.out + 1) / 2);
    maxW = CopyMaxAbsF32(w, nullptr, static_cast<size_t>(outC * inChannels * 9));
    if (!std::isfinite(maxW)) return false;
    const size_t rowPitch = 2 * tilesW + 2, channelPitch = (2 * tilesH + 2) * rowPitch;
    if (!MulOk(inChannels, static_cast<int64_t>(channelPitch), &count)) return false;
    shape = WinogradShape{.inC = static_cast<size_t>(inChannels),
                          .outC = static_cast<size_t>(outC),
                          .outH = static_cast<size_t>(H.out),
                          .outW = static_cast<size_t>(W.out),
                          .tilesH = tilesH,
                          .tilesW = tilesW,
                          .rowPitch = rowPitch,
                          .channelPitch = channelPitch};
    packed = hwy::AllocateAligned<float>(WinogradPackedCount(shape.outC, shape.inC));
    WinogradPackWeights(w, shape.outC, shape.inC, packed.get());
    padH = H.padding, padW = W.padding, inH = H.in, inW = W.in;
    inC = static_cast<double>(inChannels);
    return true;
  }

  std::vector<float> Buffer() const { return std::vector<float>(static_cast<size_t>(count) + kDirectConvSlack, 0.0f); }

  // Copies image x into the interior of buf (its borders stay zero); true when x is finite and
  // small enough that no transform or sum can overflow f32 (else the image takes the direct tiles).
  bool Fill(const float* x, float* buf) const {
    float maxX = 0;
    for (size_t ci = 0; ci < shape.inC; ++ci) {
      for (int64_t ih = 0; ih < inH; ++ih) {
        float* dst = buf + ci * shape.channelPitch + static_cast<size_t>(ih + padH) * shape.rowPitch + static_cast<size_t>(padW);
        const float* src = x + (static_cast<int64_t>(ci) * inH + ih) * inW;
        maxX = std::max(maxX, CopyMaxAbsF32(src, dst, static_cast<size_t>(inW)));
      }
    }
    return std::isfinite(maxX) && static_cast<double>(maxX) * maxW * 64.0 * inC < 0x1p100;
  }
};

template <class T>
void ForwardTyped(const Axes& ax, const Plan& p, const void* in, const void* weight,
                  const void* bias, void* out, int64_t batch, int64_t inC, int64_t outC,
                  DType dtype) {
  Widened<T> w, b;
  w.From(weight, p.weightCount, dtype);
  b.From(bias, outC, dtype);
  const int64_t K = inC * p.kV;
  // Output channels with a non-finite weight (whose padded taps would give 0 * Inf = NaN).
  std::vector<int64_t> badChannels;
  bool anyPadding = false;
  for (const Axis& a : ax) anyPadding = anyPadding || a.padding > 0;
  if (anyPadding) {
    for (int64_t co = 0; co < outC; ++co) {
      for (int64_t i = 0; i < K; ++i) {
        if (!std::isfinite(w.data[co * K + i])) {
          badChannels.push_back(co);
          break;
        }
      }
    }
  }
  const bool direct = dtype == DType::Float32 || dtype == DType::Float64;
  const size_t outBytes = DTypeStorageBytes(dtype, p.outCount);
  const bool alias = Overlaps(out, outBytes, in, DTypeStorageBytes(dtype, p.inCount)) ||
                     Overlaps(out, outBytes, weight, DTypeStorageBytes(dtype, p.weightCount)) ||
                     Overlaps(out, outBytes, bias, bias ? DTypeStorageBytes(dtype, outC) : 0);
  std::vector<uint8_t> aside(alias ? outBytes : 0);
  void* dst = alias ? static_cast<void*>(aside.data()) : out;
  const int64_t perImageOut = outC * p.outV;
  const bool pointwise = std::all_of(ax.begin(), ax.end(), [](const Axis& a) {
    return a.kernel == 1 && a.stride == 1 && a.padding == 0;
  });
  // The columns are built for chunks of output rows of about 2^17 elements (512 KiB: they and the
  // GEMM's packed copy stay in L2; measured best of 2^15 .. 2^20 for 3x3, 64 channels, 56x56).
  const int64_t outRows = ax[0].out * ax[1].out, outW = ax[2].out;
  const int64_t chunkRows =
      pointwise
          ? outRows
          : std::clamp<int64_t>((int64_t{1} << 17) / std::max<int64_t>(K * outW, 1), 1, outRows);
  const double work =
      static_cast<double>(batch) * static_cast<double>(perImageOut) * static_cast<double>(K);
  const bool imagesInParallel = batch > 1 && work >= 1e7 && NumThreads() > 1;
  const bool strideOne = std::all_of(ax.begin(), ax.end(), [](const Axis& a) { return a.stride == 1; });
  DirectPlan<T> directPlan;
  const bool directTiles = !pointwise && strideOne && K > 0 && directPlan.Build(ax, p, w.data, inC, outC);
  // Output rows per parallel task when one image is spread over the threads.
  const int64_t rowsPerTask = std::max<int64_t>(1, ax[1].out * ax[0].out / (8 * std::max(NumThreads(), 1)));
  WinogradPlan winograd;
  bool winogradTiles = false;
  if constexpr (std::is_same_v<T, float>) winogradTiles = directTiles && winograd.Build(ax, w.data, inC, outC);
  const int64_t tileRowsPerTask =
      std::max<int64_t>(1, static_cast<int64_t>(winograd.shape.tilesH) / (4 * std::max(NumThreads(), 1)));
  // Runs fn over [0, tasks) of one image: on the pool, unless images already run in parallel or
  // the work is small.
  auto withinImage = [&](int64_t tasks, const std::function<void(int64_t, int64_t)>& fn) {
    if (imagesInParallel || NumThreads() == 1 || work < 1e7) return fn(0, tasks);
    ParallelFor(tasks, 1, fn);
  };
  auto image = [&](int64_t n0, int64_t n1) {
    std::vector<T> padded;  // allocated on first use
    std::vector<float> winogradPadded;
    std::vector<T> col(pointwise || directTiles ? 0 : static_cast<size_t>(K * chunkRows * outW));
    std::vector<T> ytmp(direct ? 0 : static_cast<size_t>(perImageOut));
    Widened<T> xw;
    for (int64_t n = n0; n < n1; ++n) {
      const T* x = nullptr;
      if (direct) {
        x = static_cast<const T*>(in) + n * inC * p.inV;
      } else {
        xw.copy.clear();
        xw.From(static_cast<const uint16_t*>(in) + n * inC * p.inV, inC * p.inV, dtype);
        x = xw.data;
      }
      T* y = direct ? static_cast<T*>(dst) + n * perImageOut : ytmp.data();
      if constexpr (std::is_same_v<T, float>) {
        if (winogradTiles && winogradPadded.empty()) winogradPadded = winograd.Buffer();
        if (winogradTiles && winograd.Fill(x, winogradPadded.data())) {
          const int64_t tasks = (static_cast<int64_t>(winograd.shape.tilesH) + tileRowsPerTask - 1) / tileRowsPerTask;
          withinImage(tasks, [&](int64_t t0, int64_t t1) {
            const size_t th0 = static_cast<size_t>(t0 * tileRowsPerTask);
            const size_t th1 = std::min(winograd.shape.tilesH, static_cast<size_t>(t1 * tileRowsPerTask));
            WinogradRowsF32(winograd.shape, winogradPadded.data(), winograd.packed.get(), b.data, y, th0, th1);
          });
          if (!direct) StoreOut<T>(y, dst, n * perImageOut, perImageOut, dtype);
          continue;
        }
      }
      if (directTiles) {
        if (padded.empty()) padded = directPlan.Buffer();
        directPlan.Fill(ax, x, inC, padded.data());
        const int64_t tasksPerPlane = (ax[1].out + rowsPerTask - 1) / rowsPerTask;
        withinImage(ax[0].out * tasksPerPlane, [&](int64_t t0, int64_t t1) {
          for (int64_t t = t0; t < t1; ++t) {
            const int64_t od = t / tasksPerPlane, oh0 = t % tasksPerPlane * rowsPerTask;
            directPlan.Rows(padded.data(), b.data, y, od, oh0, std::min(ax[1].out, oh0 + rowsPerTask));
          }
        });
        for (int64_t co : badChannels) ExactBorder<T>(ax, x, w.data, b.data, inC, co, y);
        if (!direct) StoreOut<T>(y, dst, n * perImageOut, perImageOut, dtype);
        continue;
      }
      for (int64_t co = 0; co < outC; ++co) {
        FillRow<T>(y + co * p.outV, static_cast<size_t>(p.outV), b.data ? b.data[co] : T(0));
      }
      for (int64_t r0 = 0; K > 0 && r0 < outRows; r0 += chunkRows) {
        const int64_t r1 = std::min(outRows, r0 + chunkRows), width = (r1 - r0) * outW;
        const T* cols = x;
        if (!pointwise) {
          Im2Col<T>(ax, x, inC, r0, r1, col.data());
          cols = col.data();
        }
        Gemm<T>(false, static_cast<int>(outC), static_cast<int>(width), static_cast<int>(K), w.data,
                cols, static_cast<int>(width), y + r0 * outW, static_cast<int>(p.outV), !imagesInParallel);
      }
      for (int64_t co : badChannels) ExactBorder<T>(ax, x, w.data, b.data, inC, co, y);
      if (!direct) StoreOut<T>(y, dst, n * perImageOut, perImageOut, dtype);
    }
  };
  if (imagesInParallel) {
    ParallelFor(batch, 1, image);
  } else {
    image(0, batch);
  }
  if (alias) std::memcpy(out, aside.data(), outBytes);
}

template <class T>
void TransposedTyped(const Axes& ax, const Plan& p, const void* in, const void* weight,
                     const void* bias, void* out, int64_t batch, int64_t inC, int64_t outC,
                     DType dtype) {
  Widened<T> w, b;
  w.From(weight, p.weightCount, dtype);
  b.From(bias, outC, dtype);
  const Axis &H = ax[1], &W = ax[2];
  const int64_t M = outC * p.kV;  // rows of cols: (co, kh, kw)
  const bool direct = dtype == DType::Float32 || dtype == DType::Float64;
  const size_t outBytes = DTypeStorageBytes(dtype, p.outCount);
  const bool alias = Overlaps(out, outBytes, in, DTypeStorageBytes(dtype, p.inCount)) ||
                     Overlaps(out, outBytes, weight, DTypeStorageBytes(dtype, p.weightCount)) ||
                     Overlaps(out, outBytes, bias, bias ? DTypeStorageBytes(dtype, outC) : 0);
  std::vector<uint8_t> aside(alias ? outBytes : 0);
  void* dst = alias ? static_cast<void*>(aside.data()) : out;
  const int64_t perImageOut = outC * p.outV;
  const double work =
      static_cast<double>(batch) * static_cast<double>(M) * static_cast<double>(p.inV * inC);
  const bool imagesInParallel = batch > 1 && work >= 1e7 && NumThreads() > 1;
  auto image = [&](int64_t n0, int64_t n1) {
    std::vector<T> cols(static_cast<size_t>(M * p.inV));
    std::vector<T> ytmp(direct ? 0 : static_cast<size_t>(perImageOut));
    Widened<T> xw;
    for (int64_t n = n0; n < n1; ++n) {
      const T* x = nullptr;
      if (direct) {
        x = static_cast<const T*>(in) + n * inC * p.inV;
      } else {
        xw.copy.clear();
        xw.From(static_cast<const uint16_t*>(in) + n * inC * p.inV, inC * p.inV, dtype);
        x = xw.data;
      }
      T* y = direct ? static_cast<T*>(dst) + n * perImageOut : ytmp.data();
      for (int64_t co = 0; co < outC; ++co) {
        FillRow<T>(y + co * p.outV, static_cast<size_t>(p.outV), b.data ? b.data[co] : T(0));
      }
      if (inC > 0 && p.inV > 0) {
        std::fill(cols.begin(), cols.end(), T(0));
        Gemm<T>(true, static_cast<int>(M), static_cast<int>(p.inV), static_cast<int>(inC), w.data,
                x, static_cast<int>(p.inV), cols.data(), static_cast<int>(p.inV), !imagesInParallel);
        // col2im: entry (co, kh, kw, ih, iw) lands on (ih*s - p + kh*d, iw*s - p + kw*d).
        for (int64_t co = 0; co < outC; ++co) {
          T* yc = y + co * p.outV;
          for (int64_t kh = 0; kh < H.kernel; ++kh) {
            for (int64_t kw = 0; kw < W.kernel; ++kw) {
              const T* src = cols.data() + ((co * H.kernel + kh) * W.kernel + kw) * p.inV;
              for (int64_t ih = 0; ih < H.in; ++ih) {
                const int64_t oh = ih * H.stride - H.padding + kh * H.dilation;
                if (oh < 0 || oh >= H.out) continue;
                T* yrow = yc + oh * W.out;
                const T* srow = src + ih * W.in;
                for (int64_t iw = 0; iw < W.in; ++iw) {
                  const int64_t ow = iw * W.stride - W.padding + kw * W.dilation;
                  if (ow >= 0 && ow < W.out) yrow[ow] += srow[iw];
                }
              }
            }
          }
        }
      }
      if (!direct) StoreOut<T>(y, dst, n * perImageOut, perImageOut, dtype);
    }
  };
  if (imagesInParallel) {
    ParallelFor(batch, 1, image);
  } else {
    image(0, batch);
  }
  if (alias) std::memcpy(out, aside.data(), outBytes);
}

template <bool kTransposed>
void Run(const Axes& ax, const void* in, const void* weight, const void* bias, void* out,
         int64_t batch, int64_t inC, int64_t outC, DType dtype,
         const std::function<void()>& reference) {
  Plan p;
  if (!Validate(ax, kTransposed, in, weight, out, batch, inC, outC, dtype, &p)) return reference();
  if (p.outCount == 0) return;
  if (dtype == DType::Float64) {
    if constexpr (kTransposed) {
      TransposedTyped<double>(ax, p, in, weight, bias, out, batch, inC, outC, dtype);
    } else {
      ForwardTyped<double>(ax, p, in, weight, bias, out, batch, inC, outC, dtype);
    }
  } else if constexpr (kTransposed) {
    TransposedTyped<float>(ax, p, in, weight, bias, out, batch, inC, outC, dtype);
  } else {
    ForwardTyped<float>(ax, p, in, weight, bias, out, batch, inC, outC, dtype);
  }
}

Axis MakeAxis(int64_t in, int64_t kernel, int64_t out, int64_t stride, int64_t padding,
              int64_t dilation) {
  return {in, kernel, out, stride, padding, dilation};
}

void Conv1D(const Conv1DConfig& c, const void* in, const void* weight, const void* bias, void* out,
            int64_t batch, int64_t inC, int64_t inL, int64_t outC, int64_t kL, int64_t outL,
            DType dtype) {
  const Axes ax = {Axis{}, Axis{}, MakeAxis(inL, kL, outL, c.Stride, c.Padding, c.Dilation)};
  Run<false>(ax, in, weight, bias, out, batch, inC, outC, dtype, [&] {
    Reference().Convolution_Conv1D(c, in, weight, bias, out, batch, inC, inL, outC, kL, outL,
                                   dtype);
  });
}

void Conv2D(const Conv2DConfig& c, const void* in, const void* weight, const void* bias, void* out,
            int64_t batch, int64_t inC, int64_t inH, int64_t inW, int64_t outC, int64_t kH,
            int64_t kW, int64_t outH, int64_t outW, DType dtype) {
  const Axes ax = {Axis{}, MakeAxis(inH, kH, outH, c.StrideH, c.PaddingH, c.DilationH),
                   MakeAxis(inW, kW, outW, c.StrideW, c.PaddingW, c.DilationW)};
  Run<false>(ax, in, weight, bias, out, batch, inC, outC, dtype, [&] {
    Reference().Convolution_Conv2D(c, in, weight, bias, out, batch, inC, inH, inW, outC, kH, kW,
                                   outH, outW, dtype);
  });
}

void Conv3D(const Conv3DConfig& c, const void* in, const void* weight, const void* bias, void* out,
            int64_t batch, int64_t inC, int64_t inD, int64_t inH, int64_t inW, int64_t outC,
            int64_t kD, int64_t kH, int64_t kW, int64_t outD, int64_t outH, int64_t outW,
            DType dtype) {
  const Axes ax = {MakeAxis(inD, kD, outD, c.StrideD, c.PaddingD, c.DilationD),
                   MakeAxis(inH, kH, outH, c.StrideH, c.PaddingH, c.DilationH),
                   MakeAxis(inW, kW, outW, c.StrideW, c.PaddingW, c.DilationW)};
  Run<false>(ax, in, weight, bias, out, batch, inC, outC, dtype, [&] {
    Reference().Convolution_Conv3D(c, in, weight, bias, out, batch, inC, inD, inH, inW, outC, kD,
                                   kH, kW, outD, outH, outW, dtype);
  });
}

void ConvTranspose2D(const Conv2DConfig& c, const void* in, const void* weight, const void* bias,
                     void* out, int64_t batch, int64_t inC, int64_t inH, int64_t inW, int64_t outC,
                     int64_t kH, int64_t kW, int64_t outH, int64_t outW, DType dtype) {
  const Axes ax = {Axis{}, MakeAxis(inH, kH, outH, c.StrideH, c.PaddingH, c.DilationH),
                   MakeAxis(inW, kW, outW, c.StrideW, c.PaddingW, c.DilationW)};
  Run<true>(ax, in, weight, bias, out, batch, inC, outC, dtype, [&] {
    Reference().Convolution_ConvTranspose2D(c, in, weight, bias, out, batch, inC, inH, inW, outC,
                                            kH, kW, outH, outW, dtype);
  });
}

}  // namespace

void RegisterConvolution(KernelTable& t) {
  t.Convolution_Conv1D = &Conv1D;
  t.Convolution_Conv2D = &Conv2D;
  t.Convolution_Conv3D = &Conv3D;
  t.Convolution_ConvTranspose2D = &ConvTranspose2D;
}

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
