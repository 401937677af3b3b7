// The fast CPU kernels: one Highway source per surface (src/cpu/kernels/<surface>.cpp), compiled
// for every SIMD target and dispatched at run time. A surface file registers the methods it
// accelerates; the others keep the scalar reference. Fast kernels handle the common case and hand
// anything unusual (bad arguments included) to the reference, so errors are identical.
#pragma once

#include "cpu/kernel_table.hpp"

namespace backplane::cpu::simd {

void RegisterElementwise(KernelTable& table);

// The fast kernels of this build (null slots where a surface has none).
const KernelTable& Table();

// Reference table, for fallbacks.
const KernelTable& Reference();

}  // namespace backplane::cpu::simd
