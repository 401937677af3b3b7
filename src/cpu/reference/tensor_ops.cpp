// Scalar reference kernels of the TensorOps surface: registration of its four parts
// (tensor_ops_elementwise.cpp: Compare, Logical, Where, Cast, Pow, Mod, Round;
// tensor_ops_axis.cpp: ArgReduce, CumSum, Trilu, GatherElements;
// tensor_ops_index.cpp: TopK, ScatterElements, ScatterND, GatherND;
// tensor_ops_math.cpp: Trig, BitShift).
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {

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

}  // namespace backplane::cpu::ref
