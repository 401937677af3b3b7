// The one exception type of the library. Every message names the operation and the argument:
//   "Activation.GeluTanh: argument 'count' must be >= 0, got -3"
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "backplane/dtype.hpp"

namespace backplane {

enum class ErrorCode {
  InvalidArgument,
  UnsupportedDType,
  ShapeMismatch,
  NotImplemented,
  DeviceUnavailable,
  OutOfMemory,
  Internal,
};

std::string_view ErrorCodeName(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, std::string_view op, std::string_view detail);
  ErrorCode code() const noexcept { return code_; }
  const std::string& op() const noexcept { return op_; }

 private:
  ErrorCode code_;
  std::string op_;
};

// "<op>: argument '<arg>' must be <expected>, got <got>"
[[noreturn]] void ThrowInvalidArgument(std::string_view op, std::string_view arg,
                                       std::string_view expected, std::string_view got);
[[noreturn]] void ThrowShapeMismatch(std::string_view op, std::string_view arg,
                                     std::string_view expected, std::string_view got);
// "<op>: argument '<arg>' has unsupported dtype <got>; expected one of <accepted>"
[[noreturn]] void ThrowUnsupportedDType(std::string_view op, std::string_view arg, DType got,
                                        DTypeSet accepted);
// "<op>: not implemented on <device>"
[[noreturn]] void ThrowNotImplemented(std::string_view op, std::string_view device);

// Common argument checks; each throws InvalidArgument naming op and argument.
void CheckNonNegative(std::string_view op, std::string_view arg, int64_t value);
void CheckPositive(std::string_view op, std::string_view arg, int64_t value);
// A pointer may be null only when the element count it covers is zero.
void CheckPointer(std::string_view op, std::string_view arg, const void* ptr, int64_t count);
void CheckFinite(std::string_view op, std::string_view arg, double value);
void CheckDType(std::string_view op, std::string_view arg, DType got, DTypeSet accepted);

// Names the accepted dtypes, e.g. "{f64, f32, f16, bf16}".
std::string DTypeSetToString(DTypeSet set);

}  // namespace backplane
