// Fast kernels of the TensorOps surface: registration of the two halves
// (tensor_ops_elementwise.cpp, tensor_ops_axis.cpp and tensor_ops_math.cpp, each a Highway source).
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {

void RegisterTensorOpsElementwise(KernelTable& table);
void RegisterTensorOpsAxis(KernelTable& table);
void RegisterTensorOpsMath(KernelTable& table);

void RegisterTensorOps(KernelTable& table) {
  RegisterTensorOpsElementwise(table);
  RegisterTensorOpsAxis(table);
  RegisterTensorOpsMath(table);
}

}  // namespace backplane::cpu::simd
