#include "checks/normalization.hpp"

#include <fmt/format.h>

#include <cmath>

#include "backplane/error.hpp"
#include "checks/overflow.hpp"

namespace backplane::checks::normalization {

void CheckSizes(std::string_view op, int64_t batch, int64_t channels, int64_t spatial, DType dtype) {
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "batch", batch);
  CheckNonNegative(op, "channels", channels);
  CheckNonNegative(op, "spatial", spatial);
}

int64_t CheckBuffers(std::string_view op, const void* in, const void* out, int64_t batch, int64_t channels,
                     int64_t spatial) {
  const int64_t count = MulOrThrow(op, "in", MulOrThrow(op, "in", batch, channels), spatial);
  CheckPointer(op, "in", in, count);
  CheckPointer(op, "out", out, count);
  return count;
}

void CheckEps(std::string_view op, double eps) {
  if (!(std::isfinite(eps) && eps >= 0.0)) {
    ThrowInvalidArgument(op, "eps", "finite and >= 0", fmt::format("{}", eps));
  }
}

}  // namespace backplane::checks::normalization
