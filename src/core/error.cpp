#include "backplane/error.hpp"

#include <fmt/format.h>

#include <cmath>

namespace backplane {

std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::InvalidArgument: return "invalid argument";
    case ErrorCode::UnsupportedDType: return "unsupported dtype";
    case ErrorCode::ShapeMismatch: return "shape mismatch";
    case ErrorCode::NotImplemented: return "not implemented";
    case ErrorCode::DeviceUnavailable: return "device unavailable";
    case ErrorCode::OutOfMemory: return "out of memory";
    case ErrorCode::Internal: return "internal";
  }
  return "internal";
}

Error::Error(ErrorCode code, std::string_view op, std::string_view detail)
    : std::runtime_error(fmt::format("{}: {}", op, detail)), code_(code), op_(op) {}

void ThrowInvalidArgument(std::string_view op, std::string_view arg, std::string_view expected,
                          std::string_view got) {
  throw Error(ErrorCode::InvalidArgument, op,
              fmt::format("argument '{}' must be {}, got {}", arg, expected, got));
}

void ThrowShapeMismatch(std::string_view op, std::string_view arg, std::string_view expected,
                        std::string_view got) {
  throw Error(ErrorCode::ShapeMismatch, op,
              fmt::format("argument '{}' must be {}, got {}", arg, expected, got));
}

std::string DTypeSetToString(DTypeSet set) {
  std::string out = "{";
  for (DType d : AllDTypes()) {
    if (!set.Contains(d)) continue;
    if (out.size() > 1) out += ", ";
    out += DTypeName(d);
  }
  return out + "}";
}

void ThrowUnsupportedDType(std::string_view op, std::string_view arg, DType got,
                           DTypeSet accepted) {
  const std::string_view got_name =
      DTypeName(got) == "invalid" && got != DType::Invalid ? "unknown" : DTypeName(got);
  throw Error(ErrorCode::UnsupportedDType, op,
              fmt::format("argument '{}' has unsupported dtype {} (value {}); expected one of {}",
                          arg, got_name, static_cast<int>(got), DTypeSetToString(accepted)));
}

void ThrowNotImplemented(std::string_view op, std::string_view device) {
  throw Error(ErrorCode::NotImplemented, op, fmt::format("not implemented on {}", device));
}

void CheckNonNegative(std::string_view op, std::string_view arg, int64_t value) {
  if (value < 0) ThrowInvalidArgument(op, arg, ">= 0", std::to_string(value));
}

void CheckPositive(std::string_view op, std::string_view arg, int64_t value) {
  if (value <= 0) ThrowInvalidArgument(op, arg, "> 0", std::to_string(value));
}

void CheckPointer(std::string_view op, std::string_view arg, const void* ptr, int64_t count) {
  if (ptr == nullptr && count > 0) {
    ThrowInvalidArgument(op, arg, fmt::format("non-null for {} elements", count), "null");
  }
}

void CheckFinite(std::string_view op, std::string_view arg, double value) {
  if (!std::isfinite(value)) ThrowInvalidArgument(op, arg, "finite", fmt::format("{}", value));
}

void CheckDType(std::string_view op, std::string_view arg, DType got, DTypeSet accepted) {
  if (!accepted.Contains(got)) ThrowUnsupportedDType(op, arg, got, accepted);
}

}  // namespace backplane
