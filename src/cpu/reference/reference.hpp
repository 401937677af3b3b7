// The scalar reference kernels: the oracle every other implementation is tested against.
// Each surface file (src/cpu/reference/<surface>.cpp) registers its kernels into a table.
#pragma once

#include "cpu/kernel_table.hpp"

namespace backplane::cpu::ref {

#define BP_DECLARE_REGISTER(S, LIST) void Register##S(KernelTable& table);
BP_SURFACES(BP_DECLARE_REGISTER)
#undef BP_DECLARE_REGISTER

// All reference kernels, built once.
const KernelTable& Table();

}  // namespace backplane::cpu::ref
