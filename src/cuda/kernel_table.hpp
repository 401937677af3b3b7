// One function-pointer slot per catalog method for the CUDA backend; a null slot means "no CUDA
// kernel". Each kernel file fills the slots of its surface.
#pragma once

#include "backplane/backend/backend.hpp"
#include "backplane/catalog/catalog.hpp"

namespace backplane::cuda {

struct KernelTable {
#define BP_CUDA_SLOT(S, M, F, D) BP_RET_##F (*S##_##M)(BP_PARAMS_##F) = nullptr;
  BP_ALL_METHODS(BP_CUDA_SLOT)
#undef BP_CUDA_SLOT

  bool Has(catalog::MethodId id) const {
    switch (id) {
#define BP_CUDA_HAS(S, M, F, D) \
  case catalog::MethodId::S##_##M: return S##_##M != nullptr;
      BP_ALL_METHODS(BP_CUDA_HAS)
#undef BP_CUDA_HAS
    }
    return false;
  }
};

// The kernel files' registration functions (src/cuda/kernels/*.cu).
void RegisterElementwise(KernelTable& table);
void RegisterActivation(KernelTable& table);
void RegisterRows(KernelTable& table);
void RegisterMatmul(KernelTable& table);
void RegisterShape(KernelTable& table);
void RegisterNn(KernelTable& table);
void RegisterOptimizer(KernelTable& table);
void RegisterPhysicsCausal(KernelTable& table);
void RegisterResearch(KernelTable& table);
void RegisterTensorIndex(KernelTable& table);
void RegisterTraining(KernelTable& table);

// Every kernel of this build, registered once.
const KernelTable& Table();

}  // namespace backplane::cuda
