// tensor.*: comparisons, logic, selection, casts, integer ops, index ops.
#include "xla/lowering.hpp"

namespace backplane::xla {

void RegisterTensorLowerings(LoweringTable& t) { (void)t; }

}  // namespace backplane::xla
