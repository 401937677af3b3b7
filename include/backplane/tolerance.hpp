// The one tolerance table, used by the tests and by `backplane verify`: a result r matches an
// oracle value w when |r - w| <= abs + rel * |w|. The bounds are PyTorch's assert_close defaults
// (the loosest acceptable) or tighter.
#pragma once

#include "backplane/dtype.hpp"

namespace backplane {

struct Tolerance {
  double abs;
  double rel;
};

constexpr Tolerance DefaultTolerance(DType dtype) {
  switch (dtype) {
    case DType::Float64: return {1e-10, 1e-10};
    case DType::Float32: return {1e-5, 1.3e-6};
    case DType::Float16: return {1e-5, 1e-3};
    case DType::BFloat16: return {1e-5, 1.6e-2};
    default: return {0.0, 0.0};  // integer and packed formats compare exactly
  }
}

}  // namespace backplane
