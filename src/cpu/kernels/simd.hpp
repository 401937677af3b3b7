// The fast CPU kernels: one Highway source per surface (src/cpu/kernels/<surface>.cpp), compiled
// for every SIMD target and dispatched at run time. A surface file registers the methods it
// accelerates; the others keep the scalar reference. Fast kernels handle the common case and hand
// anything unusual (bad arguments included) to the reference, so errors are identical.
#pragma once

#include "cpu/kernel_table.hpp"

namespace backplane::cpu::simd {

// One per surface: src/cpu/kernels/<surface>.cpp registers the methods it accelerates.
#define BP_DECLARE_SIMD_REGISTER(S, LIST) void Register##S(KernelTable& table);
BP_SURFACES(BP_DECLARE_SIMD_REGISTER)
#undef BP_DECLARE_SIMD_REGISTER

// The fast kernels of this build (null slots where a surface has none).
const KernelTable& Table();

// Reference table, for fallbacks.
const KernelTable& Reference();

}  // namespace backplane::cpu::simd
