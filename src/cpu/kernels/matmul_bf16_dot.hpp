// bf16 GEMM on the AVX512-BF16 dot-product instruction (vdpbf16ps: two bf16 products added into
// each f32 lane per instruction, so twice the multiply-adds of an f32 FMA). x86-64 only; the
// matmul kernel's AVX-512 target calls it when the CPU has the instruction.
#pragma once

#include <cstddef>
#include <cstdint>

namespace backplane::cpu::simd {

// True when this CPU executes vdpbf16ps (AVX512-BF16) and this build has the kernel.
bool HasBf16DotGemm();

// c [rows, cols] (f32) = a [rows, inner] * b [inner, cols] (b^T with trans_b: b is [cols, inner]),
// bf16 storage, row-major. Each output
// is accumulated in f32 over k in the same order whatever the thread count: pairs (2p, 2p + 1)
// in k order, each pair added as the instruction adds it (the products of bf16 values are exact
// in f32). The instruction treats denormal inputs and results as zero (DAZ/FTZ). rows >= 6.
void Bf16DotGemm(const uint16_t* a, const uint16_t* b, float* c, size_t rows, size_t inner, size_t cols,
                 bool trans_b = false);

}  // namespace backplane::cpu::simd
