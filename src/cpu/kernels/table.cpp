#include "cpu/kernels/simd.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::simd {

const KernelTable& Table() {
  static const KernelTable table = [] {
    KernelTable t;
#define BP_CALL_SIMD_REGISTER(S, LIST) Register##S(t);
    BP_SURFACES(BP_CALL_SIMD_REGISTER)
#undef BP_CALL_SIMD_REGISTER
    return t;
  }();
  return table;
}

const KernelTable& Reference() { return ref::Table(); }

}  // namespace backplane::cpu::simd
