#include "checks/overflow.hpp"

#include <fmt/format.h>

#include "backplane/error.hpp"

namespace backplane::checks {

int64_t MulOrThrow(std::string_view op, std::string_view arg, int64_t a, int64_t b) {
  int64_t result = 0;
  if (__builtin_mul_overflow(a, b, &result)) {
    ThrowInvalidArgument(op, arg, "small enough for its sizes to fit in int64", fmt::format("{} * {}", a, b));
  }
  return result;
}

int64_t AddOrThrow(std::string_view op, std::string_view arg, int64_t a, int64_t b) {
  int64_t result = 0;
  if (__builtin_add_overflow(a, b, &result)) {
    ThrowInvalidArgument(op, arg, "small enough for its sizes to fit in int64", fmt::format("{} + {}", a, b));
  }
  return result;
}

}  // namespace backplane::checks
