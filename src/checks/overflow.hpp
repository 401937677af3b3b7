// Size arithmetic for argument checks: a product or sum of sizes that must fit in int64.
#pragma once

#include <cstdint>
#include <string_view>

namespace backplane::checks {

// a * b, or InvalidArgument naming `op` and `arg` when the product does not fit in int64.
int64_t MulOrThrow(std::string_view op, std::string_view arg, int64_t a, int64_t b);
// a + b, or InvalidArgument naming `op` and `arg` when the sum does not fit in int64.
int64_t AddOrThrow(std::string_view op, std::string_view arg, int64_t a, int64_t b);

}  // namespace backplane::checks
