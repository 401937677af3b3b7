#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {

const KernelTable& Table() {
  static const KernelTable table = [] {
    KernelTable t;
#define BP_CALL_REGISTER(S, LIST) Register##S(t);
    BP_SURFACES(BP_CALL_REGISTER)
#undef BP_CALL_REGISTER
    return t;
  }();
  return table;
}

}  // namespace backplane::cpu::ref
