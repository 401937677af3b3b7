// quant.*: per-tensor int8 (de)quantisation and ggml block formats.
#include "xla/lower_nn_common.hpp"

namespace backplane::xla::nn {

void RegisterQuantLowerings(LoweringTable& t) { (void)t; }

}  // namespace backplane::xla::nn
