// One function-pointer slot per catalog method. A null slot means "no kernel".
#pragma once

#include "backplane/backend/backend.hpp"
#include "backplane/catalog/catalog.hpp"

namespace backplane::cpu {

struct KernelTable {
#define BP_KERNEL_SLOT(S, M, F, D) BP_RET_##F (*S##_##M)(BP_PARAMS_##F) = nullptr;
  BP_ALL_METHODS(BP_KERNEL_SLOT)
#undef BP_KERNEL_SLOT

  bool Has(catalog::MethodId id) const {
    switch (id) {
#define BP_KERNEL_HAS(S, M, F, D) \
  case catalog::MethodId::S##_##M: return S##_##M != nullptr;
      BP_ALL_METHODS(BP_KERNEL_HAS)
#undef BP_KERNEL_HAS
    }
    return false;
  }
};

}  // namespace backplane::cpu
