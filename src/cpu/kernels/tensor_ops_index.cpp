// The TensorOps index part (TopK, ScatterElements, ScatterND, GatherND) stays on the scalar
// reference by design; the reasons below are what the dispatch matrix shows.
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {

void RegisterTensorOpsIndex(KernelTable& table) {
  table.ScalarByDesign(catalog::MethodId::TensorOps_TopK,
                       "comparison selection (partial sort with index tie-break) per row: data-dependent "
                       "branching and swaps, no fixed lane-parallel work");
  table.ScalarByDesign(catalog::MethodId::TensorOps_ScatterElements,
                       "index-chasing scatter: one indexed read-modify-write per element, applied in order "
                       "(duplicate indices serialise)");
  table.ScalarByDesign(catalog::MethodId::TensorOps_ScatterND,
                       "index-chasing scatter of slices: memcpy-sized runs applied in index order");
  table.ScalarByDesign(catalog::MethodId::TensorOps_GatherND,
                       "index-chasing gather of slices: one memcpy per index tuple, no lane-parallel work");
}

}  // namespace backplane::cpu::simd
