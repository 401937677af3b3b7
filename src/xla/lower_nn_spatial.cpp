// spatial.grid_sample and spatial.roi_align.
#include "xla/lower_nn_common.hpp"

namespace backplane::xla::nn {

void RegisterSpatialLowerings(LoweringTable& t) { (void)t; }

}  // namespace backplane::xla::nn
