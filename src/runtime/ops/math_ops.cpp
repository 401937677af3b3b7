// Graph-level lowerings: see ops.hpp for the domains this file covers.
#include "runtime/ops/ops.hpp"

namespace backplane::runtime::ops {

void RegisterMathOps(OpRegistry& registry) { (void)registry; }

}  // namespace backplane::runtime::ops
