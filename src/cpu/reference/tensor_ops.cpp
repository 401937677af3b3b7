// Scalar reference kernels of the TensorOps surface: registration of the three parts
// (tensor_ops_elementwise.cpp: Compare, Logical, Where, Cast, Pow, Mod, Round;
// tensor_ops_axis.cpp: ArgReduce, CumSum, Trilu, GatherElements;
// tensor_ops_index.cpp: TopK, ScatterElements, ScatterND, GatherND).
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {

void RegisterTensorOpsElementwise(KernelTable& table);
void RegisterTensorOpsAxis(KernelTable& table);
void RegisterTensorOpsIndex(KernelTable& table);

void RegisterTensorOps(KernelTable& table) {
  RegisterTensorOpsElementwise(table);
  RegisterTensorOpsAxis(table);
  RegisterTensorOpsIndex(table);
}

}  // namespace backplane::cpu::ref
