// Reading single values of device buffers back to the host, for the data-dependent checks.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#include "backplane/convert.hpp"
#include "backplane/dtype.hpp"
#include "backplane/error.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/kernels/device_scratch.hpp"

namespace backplane::cuda {

// Element i of a float buffer in device memory, after the stream's work, widened to double as the
// reference's Load<double> widens it (NaN sign and payload included). `op` names the method in
// an error.
inline double ReadFloatElement(std::string_view op, const void* data, int64_t i, DType dtype) {
  const size_t bytes = DTypeStorageBytes(dtype, 1);
  unsigned char raw[8] = {};
  CopyAsync(raw, static_cast<const unsigned char*>(data) + static_cast<size_t>(i) * bytes, bytes);
  FinishMethod(op);
  switch (dtype) {
    case DType::Float64: {
      double v = 0.0;
      std::memcpy(&v, raw, sizeof(v));
      return v;
    }
    case DType::Float32: {
      float v = 0.0f;
      std::memcpy(&v, raw, sizeof(v));
      return static_cast<double>(v);
    }
    case DType::Float16:
    case DType::BFloat16: {
      uint16_t v = 0;
      std::memcpy(&v, raw, sizeof(v));
      return static_cast<double>(dtype == DType::Float16 ? ::backplane::F16ToF32(v) : ::backplane::BF16ToF32(v));
    }
    default: break;
  }
  throw Error(ErrorCode::Internal, op, "not a floating storage format");
}

}  // namespace backplane::cuda
