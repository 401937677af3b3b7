#include "cpu/kernels/simd.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::simd {

const KernelTable& Table() {
  static const KernelTable table = [] {
    KernelTable t;
    RegisterElementwise(t);
    return t;
  }();
  return table;
}

const KernelTable& Reference() { return ref::Table(); }

}  // namespace backplane::cpu::simd
