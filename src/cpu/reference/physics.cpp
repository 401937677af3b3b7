// Scalar reference kernels for the Physics surface: periodic finite-difference stencils, the
// discrete Fourier transform (any length) and the 1-D quantum-hydrodynamics helpers.
// Semantics and every departure from the seed reference: docs/semantics/physics.md.
//
// Every method widens its inputs to float64, computes in float64 and rounds once to the output
// format. Because the whole result is built in a temporary before the first store, every method
// is safe in place (output may alias an input).
#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <string>
#include <string_view>
#include <vector>

#include "cpu/reference/common.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace physics {
namespace {

using Vec = std::vector<double>;

// ---- shared helpers -----------------------------------------------------------------------------

void StoreAll(const Vec& values, void* data, DType dtype) {
  for (size_t i = 0; i < values.size(); ++i) {
    StoreResult(data, static_cast<int64_t>(i), dtype, values[i]);
  }
}

void CheckSpacing(std::string_view op, float spacing) {
  if (!std::isfinite(spacing) || !(spacing > 0.0f)) {
    ThrowInvalidArgument(op, "spacing", "finite and > 0", fmt::format("{}", spacing));
  }
}

// Index i + offset wrapped into [0, n) (periodic boundary).
int64_t Wrap(int64_t i, int64_t offset, int64_t n) {
  int64_t j = (i + offset) % n;
  return j < 0 ? j + n : j;
}

// Shared validation for the one-input 1-D stencils; returns the widened input (empty if count 0).
Vec PrepareStencil1D(std::string_view op, std::string_view inputName, const void* input,
                     void* output, int64_t count, float spacing, DType dtype) {
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "count", count);
  CheckPointer(op, inputName, input, count);
  CheckPointer(op, "output", output, count);
  CheckSpacing(op, spacing);
  return Widen<double>(input, count, dtype);
}

// Periodic central first difference (u[i+1] - u[i-1]) / (2h).
Vec CentralDifference(const Vec& u, double h) {
  const int64_t n = static_cast<int64_t>(u.size());
  Vec out(u.size());
  for (int64_t i = 0; i < n; ++i) {
    out[static_cast<size_t>(i)] =
        (u[static_cast<size_t>(Wrap(i, 1, n))] - u[static_cast<size_t>(Wrap(i, -1, n))]) /
        (2.0 * h);
  }
  return out;
}

void FirstDerivative(std::string_view op, std::string_view inputName, const void* input,
                     void* output, int64_t count, float spacing, DType dtype) {
  const Vec u = PrepareStencil1D(op, inputName, input, output, count, spacing, dtype);
  if (count == 0) return;
  StoreAll(CentralDifference(u, static_cast<double>(spacing)), output, dtype);
}

// ---- FFT ----------------------------------------------------------------------------------------

bool IsPowerOfTwo(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

// Unnormalised DFT with exponent sign * 2*pi*i*j*k/n, in place, for a power-of-two length:
// iterative radix-2 decimation in time (Cooley & Tukey 1965) with a twiddle table computed
// directly from cos/sin of the exact angle (no twiddle recurrence).
void Radix2(Vec& re, Vec& im, int sign) {
  const size_t n = re.size();
  if (n <= 1) return;
  for (size_t i = 1, j = 0; i < n; ++i) {  // bit-reversal permutation
    size_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j |= bit;
    if (i < j) {
      std::swap(re[i], re[j]);
      std::swap(im[i], im[j]);
    }
  }
  Vec cosTable(n / 2), sinTable(n / 2);
  for (size_t k = 0; k < n / 2; ++k) {
    const double angle = 2.0 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(n);
    cosTable[k] = std::cos(angle);
    sinTable[k] = sign * std::sin(angle);
  }
  for (size_t len = 2; len <= n; len <<= 1) {
    const size_t half = len / 2, stride = n / len;
    for (size_t start = 0; start < n; start += len) {
      for (size_t j = 0; j < half; ++j) {
        const double wr = cosTable[j * stride], wi = sinTable[j * stride];
        const size_t a = start + j, b = a + half;
        const double tr = wr * re[b] - wi * im[b];
        const double ti = wr * im[b] + wi * re[b];
        re[b] = re[a] - tr;
        im[b] = im[a] - ti;
        re[a] += tr;
        im[a] += ti;
      }
    }
  }
}

// Unnormalised DFT of any length through Bluestein's chirp-z identity
// jk = (j^2 + k^2 - (k - j)^2) / 2, which turns the DFT into a circular convolution evaluated with
// power-of-two FFTs of length >= 2n - 1 (Bluestein 1970; Rabiner, Schafer & Rader 1969).
void Bluestein(Vec& re, Vec& im, int sign) {
  const int64_t n = static_cast<int64_t>(re.size());
  // Chirp w_k = exp(sign * i*pi * k^2 / n); k^2 is reduced mod 2n in integers so the angle stays
  // exact for every length.
  Vec wr(static_cast<size_t>(n)), wi(static_cast<size_t>(n));
  uint64_t k2 = 0;  // k^2 mod 2n
  const uint64_t twoN = 2 * static_cast<uint64_t>(n);
  for (int64_t k = 0; k < n; ++k) {
    const double angle = std::numbers::pi * static_cast<double>(k2) / static_cast<double>(n);
    wr[static_cast<size_t>(k)] = std::cos(angle);
    wi[static_cast<size_t>(k)] = sign * std::sin(angle);
    k2 = (k2 + 2 * static_cast<uint64_t>(k) + 1) % twoN;
  }
  size_t m = 1;
  while (m < static_cast<size_t>(2 * n - 1)) m <<= 1;
  Vec ar(m, 0.0), ai(m, 0.0), br(m, 0.0), bi(m, 0.0);
  for (size_t k = 0; k < static_cast<size_t>(n); ++k) {
    ar[k] = re[k] * wr[k] - im[k] * wi[k];  // a_k = x_k * w_k
    ai[k] = re[k] * wi[k] + im[k] * wr[k];
  }
  br[0] = wr[0];  // b_m = conj(w_|m|), circularly indexed
  bi[0] = -wi[0];
  for (size_t k = 1; k < static_cast<size_t>(n); ++k) {
    br[k] = br[m - k] = wr[k];
    bi[k] = bi[m - k] = -wi[k];
  }
  Radix2(ar, ai, -1);
  Radix2(br, bi, -1);
  for (size_t k = 0; k < m; ++k) {
    const double r = ar[k] * br[k] - ai[k] * bi[k];
    const double i = ar[k] * bi[k] + ai[k] * br[k];
    ar[k] = r;
    ai[k] = i;
  }
  Radix2(ar, ai, +1);
  const double inv = 1.0 / static_cast<double>(m);
  for (size_t k = 0; k < static_cast<size_t>(n); ++k) {
    const double cr = ar[k] * inv, ci = ai[k] * inv;
    re[k] = cr * wr[k] - ci * wi[k];  // X_k = w_k * conv_k
    im[k] = cr * wi[k] + ci * wr[k];
  }
}

void Transform(std::string_view op, int sign, const void* realIn, const void* imagIn, void* realOut,
               void* imagOut, int64_t count, DType dtype) {
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "realIn", realIn, count);  // imagIn may be null: zero imaginary input
  CheckPointer(op, "realOut", realOut, count);
  CheckPointer(op, "imagOut", imagOut, count);
  if (count == 0) return;
  Vec re = Widen<double>(realIn, count, dtype);
  Vec im =
      imagIn != nullptr ? Widen<double>(imagIn, count, dtype) : Vec(static_cast<size_t>(count));
  if (IsPowerOfTwo(count)) {
    Radix2(re, im, sign);
  } else {
    Bluestein(re, im, sign);
  }
  if (sign > 0) {  // inverse: scale by 1/n so that IFFT(FFT(x)) = x
    for (size_t k = 0; k < re.size(); ++k) {
      re[k] /= static_cast<double>(count);
      im[k] /= static_cast<double>(count);
    }
  }
  StoreAll(re, realOut, dtype);
  StoreAll(im, imagOut, dtype);
}

}  // namespace

// ---- the nine methods ---------------------------------------------------------------------------

void Laplacian(const void* input, void* output, const int64_t* dims, int64_t rank, float spacing,
               DType dtype) {
  constexpr std::string_view op = "Physics.Laplacian";
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  if (rank < 1 || rank > 3) ThrowInvalidArgument(op, "rank", "1, 2 or 3", std::to_string(rank));
  CheckPointer(op, "dims", dims, rank);
  int64_t count = 1;
  for (int64_t a = 0; a < rank; ++a) {
    const std::string name = fmt::format("dims[{}]", a);
    CheckNonNegative(op, name, dims[a]);
    if (dims[a] != 0 && count > std::numeric_limits<int64_t>::max() / 8 / dims[a]) {
      ThrowInvalidArgument(op, "dims", "an element count that fits in memory",
                           "a product that overflows");
    }
    count *= dims[a];
  }
  CheckPointer(op, "input", input, count);
  CheckPointer(op, "output", output, count);
  CheckSpacing(op, spacing);
  if (count == 0) return;

  const Vec u = Widen<double>(input, count, dtype);
  const double h2 = static_cast<double>(spacing) * static_cast<double>(spacing);
  Vec out(u.size(), 0.0);
  // Sum over axes of the periodic 1-D second difference along that axis.
  int64_t inner = count;  // number of elements per step of the current axis, times its extent
  for (int64_t a = 0; a < rank; ++a) {
    const int64_t extent = dims[a];
    inner /= extent;  // stride of axis a
    const int64_t stride = inner;
    for (int64_t idx = 0; idx < count; ++idx) {
      const int64_t coord = (idx / stride) % extent;
      const int64_t base = idx - coord * stride;
      const double left = u[static_cast<size_t>(base + Wrap(coord, -1, extent) * stride)];
      const double right = u[static_cast<size_t>(base + Wrap(coord, 1, extent) * stride)];
      out[static_cast<size_t>(idx)] += left - 2.0 * u[static_cast<size_t>(idx)] + right;
    }
  }
  for (double& v : out) v /= h2;
  StoreAll(out, output, dtype);
}

void Laplacian4(const void* input, void* output, int64_t count, float spacing, DType dtype) {
  const Vec u =
      PrepareStencil1D("Physics.Laplacian4", "input", input, output, count, spacing, dtype);
  if (count == 0) return;
  const double h = static_cast<double>(spacing);
  const int64_t n = count;
  Vec out(u.size());
  auto at = [&](int64_t i, int64_t offset) { return u[static_cast<size_t>(Wrap(i, offset, n))]; };
  for (int64_t i = 0; i < n; ++i) {
    out[static_cast<size_t>(i)] =
        (-at(i, -2) + 16.0 * at(i, -1) - 30.0 * at(i, 0) + 16.0 * at(i, 1) - at(i, 2)) /
        (12.0 * h * h);
  }
  StoreAll(out, output, dtype);
}

void Grad1D(const void* input, void* output, int64_t count, float spacing, DType dtype) {
  FirstDerivative("Physics.Grad1D", "input", input, output, count, spacing, dtype);
}

void Divergence1D(const void* input, void* output, int64_t count, float spacing, DType dtype) {
  FirstDerivative("Physics.Divergence1D", "input", input, output, count, spacing, dtype);
}

void FFT1D(const void* realIn, const void* imagIn, void* realOut, void* imagOut, int64_t count,
           DType dtype) {
  Transform("Physics.FFT1D", -1, realIn, imagIn, realOut, imagOut, count, dtype);
}

void IFFT1D(const void* realIn, const void* imagIn, void* realOut, void* imagOut, int64_t count,
            DType dtype) {
  Transform("Physics.IFFT1D", +1, realIn, imagIn, realOut, imagOut, count, dtype);
}

// Q = -(hbar^2 / 2m) * (d^2 sqrt(rho) / dx^2) / sqrt(rho) with hbar = m = 1; Q = 0 where rho = 0.
// The signature's first argument is the density; it is named "input" in the family signature.
void QuantumPotential(const void* input, void* output, int64_t count, float spacing, DType dtype) {
  constexpr std::string_view op = "Physics.QuantumPotential";
  const Vec rho = PrepareStencil1D(op, "input", input, output, count, spacing, dtype);
  for (size_t i = 0; i < rho.size(); ++i) {
    if (!(rho[i] >= 0.0) || !std::isfinite(rho[i])) {
      ThrowInvalidArgument(op, "input", "a density (finite and >= 0)",
                           fmt::format("input[{}] = {}", i, rho[i]));
    }
  }
  if (count == 0) return;
  const double h = static_cast<double>(spacing);
  const int64_t n = count;
  Vec s(rho.size());
  for (size_t i = 0; i < rho.size(); ++i) s[i] = std::sqrt(rho[i]);
  Vec out(rho.size());
  for (int64_t i = 0; i < n; ++i) {
    const double c = s[static_cast<size_t>(i)];
    if (c == 0.0) {
      out[static_cast<size_t>(i)] = 0.0;
      continue;
    }
    const double second =
        s[static_cast<size_t>(Wrap(i, -1, n))] - 2.0 * c + s[static_cast<size_t>(Wrap(i, 1, n))];
    out[static_cast<size_t>(i)] = -0.5 * (second / (h * h)) / c;
  }
  StoreAll(out, output, dtype);
}

// v = dS/dx with hbar/m = 1 (periodic central difference of the phase/action S).
void BohmianVelocity(const void* input, void* output, int64_t count, float spacing, DType dtype) {
  FirstDerivative("Physics.BohmianVelocity", "input", input, output, count, spacing, dtype);
}

// residual = d(rho v)/dx (periodic central difference of the flux); the caller adds d rho/dt.
void MadelungContinuity(const void* density, const void* velocity, void* residual, int64_t count,
                        float spacing, DType dtype) {
  constexpr std::string_view op = "Physics.MadelungContinuity";
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "density", density, count);
  CheckPointer(op, "velocity", velocity, count);
  CheckPointer(op, "residual", residual, count);
  CheckSpacing(op, spacing);
  if (count == 0) return;
  const Vec rho = Widen<double>(density, count, dtype);
  const Vec v = Widen<double>(velocity, count, dtype);
  Vec flux(rho.size());
  for (size_t i = 0; i < rho.size(); ++i) flux[i] = rho[i] * v[i];
  StoreAll(CentralDifference(flux, static_cast<double>(spacing)), residual, dtype);
}

}  // namespace physics

void RegisterPhysics(KernelTable& table) {
  table.Physics_Laplacian = &physics::Laplacian;
  table.Physics_Laplacian4 = &physics::Laplacian4;
  table.Physics_Grad1D = &physics::Grad1D;
  table.Physics_Divergence1D = &physics::Divergence1D;
  table.Physics_FFT1D = &physics::FFT1D;
  table.Physics_IFFT1D = &physics::IFFT1D;
  table.Physics_QuantumPotential = &physics::QuantumPotential;
  table.Physics_BohmianVelocity = &physics::BohmianVelocity;
  table.Physics_MadelungContinuity = &physics::MadelungContinuity;
}

}  // namespace backplane::cpu::ref
