// Scalar reference kernels for the Embedding surface.
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {

void RegisterEmbedding(KernelTable& table) { (void)table; }

}  // namespace backplane::cpu::ref
