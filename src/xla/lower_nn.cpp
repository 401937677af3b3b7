// Neural-network layers: norms, attention, convolution, pooling, embeddings, projections.
#include "xla/lowering.hpp"

namespace backplane::xla {

void RegisterNnLowerings(LoweringTable& t) { (void)t; }

}  // namespace backplane::xla
