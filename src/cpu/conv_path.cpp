#include "backplane/cpu/conv_path.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include "backplane/error.hpp"

namespace backplane::cpu {
namespace {

// -1: not decided yet; otherwise a ConvPath.
std::atomic<int> g_path{-1};

ConvPath FromEnvironment() {
  const char* env = std::getenv("BACKPLANE_CONV");
  if (env == nullptr || *env == '\0' || std::string_view(env) == "winograd") return ConvPath::Winograd;
  if (std::string_view(env) == "direct") return ConvPath::Direct;
  ThrowInvalidArgument("BACKPLANE_CONV", "BACKPLANE_CONV", "'winograd' or 'direct'", fmt::format("'{}'", env));
}

}  // namespace

ConvPath CurrentConvPath() {
  int path = g_path.load(std::memory_order_relaxed);
  if (path < 0) {
    path = static_cast<int>(FromEnvironment());
    g_path.store(path, std::memory_order_relaxed);
  }
  return static_cast<ConvPath>(path);
}

void SetConvPath(ConvPath path) { g_path.store(static_cast<int>(path), std::memory_order_relaxed); }

std::string_view ConvPathName(ConvPath path) { return path == ConvPath::Winograd ? "winograd" : "direct"; }

}  // namespace backplane::cpu
