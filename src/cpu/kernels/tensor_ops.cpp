// Fast kernels of the TensorOps surface: registration of its parts
// (tensor_ops_elementwise.cpp, tensor_ops_axis.cpp, tensor_ops_index.cpp and tensor_ops_math.cpp,
// each a Highway source).
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {

void RegisterTensorOpsElementwise(KernelTable& table);
void RegisterTensorOpsAxis(KernelTable& table);
void RegisterTensorOpsIndex(KernelTable& table);
void RegisterTensorOpsMath(KernelTable& table);

void RegisterTensorOps(KernelTable& table) {
  RegisterTensorOpsElementwise(table);
  RegisterTensorOpsAxis(table);
  RegisterTensorOpsIndex(table);
  RegisterTensorOpsMath(table);
}

}  // namespace backplane::cpu::simd
