#include "backplane/cpu/gemm_path.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include "backplane/error.hpp"

namespace backplane::cpu {
namespace {

// -1: not decided yet; otherwise a GemmPath.
std::atomic<int> g_path{-1};

GemmPath FromEnvironment() {
  const char* env = std::getenv("BACKPLANE_GEMM");
  if (env == nullptr || *env == '\0' || std::string_view(env) == "own") return GemmPath::Own;
  if (std::string_view(env) == "openblas") return GemmPath::OpenBlas;
  ThrowInvalidArgument("BACKPLANE_GEMM", "BACKPLANE_GEMM", "'openblas' or 'own'", fmt::format("'{}'", env));
}

}  // namespace

GemmPath CurrentGemmPath() {
  int path = g_path.load(std::memory_order_relaxed);
  if (path < 0) {
    path = static_cast<int>(FromEnvironment());
    g_path.store(path, std::memory_order_relaxed);
  }
  return static_cast<GemmPath>(path);
}

void SetGemmPath(GemmPath path) { g_path.store(static_cast<int>(path), std::memory_order_relaxed); }

std::string_view GemmPathName(GemmPath path) { return path == GemmPath::Own ? "own" : "openblas"; }

}  // namespace backplane::cpu
