// One function-pointer slot per catalog method. A null slot means "no kernel".
#pragma once

#include <map>

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

  // Methods a surface leaves on the scalar reference on purpose (a sequential recurrence, an
  // index-chasing loop, pure data movement), with the reason the dispatch matrix shows.
  std::map<catalog::MethodId, const char*> scalar_by_design;
  void ScalarByDesign(catalog::MethodId id, const char* reason) { scalar_by_design[id] = reason; }
};

}  // namespace backplane::cpu
