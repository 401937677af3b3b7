#include "backplane/cpu/targets.hpp"

#include <fmt/format.h>
#include <hwy/targets.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "backplane/cpu_info.hpp"
#include "backplane/error.hpp"

namespace backplane::cpu {
namespace {

struct Named {
  const char* name;
  int64_t bits;
};

// Our names for Highway's targets (g++ 12 builds HWY_SCALAR as the portable fallback).
constexpr Named kTargets[] = {
#if HWY_ARCH_X86
    {"avx512", HWY_AVX3}, {"avx2", HWY_AVX2}, {"sse4", HWY_SSE4}, {"ssse3", HWY_SSSE3},
#endif
#if HWY_ARCH_ARM
    {"sve2_128", HWY_SVE2_128}, {"sve_256", HWY_SVE_256}, {"sve2", HWY_SVE2}, {"sve", HWY_SVE}, {"neon", HWY_NEON},
#endif
    {"scalar", HWY_SCALAR}, {"scalar", HWY_EMU128},
};

}  // namespace

std::vector<std::string> RunnableTargets() {
  std::vector<std::string> names;
  // Ignore any forced target: report what the CPU can run.
  const int64_t supported = hwy::SupportedTargets();
  for (const Named& t : kTargets) {
    if ((HWY_TARGETS & t.bits) == 0) continue;
    if ((supported & t.bits) == 0 && t.bits != HWY_SCALAR && t.bits != HWY_EMU128) continue;
    if (std::find(names.begin(), names.end(), t.name) == names.end()) names.emplace_back(t.name);
  }
  return names;
}

std::string SelectedTarget() { return QueryCpuInfo().selected; }

void ForceTarget(std::string_view name) {
  if (name.empty()) {
    hwy::SetSupportedTargetsForTest(0);
    return;
  }
  for (const Named& t : kTargets) {
    if (name != t.name || (HWY_TARGETS & t.bits) == 0) continue;
    hwy::SetSupportedTargetsForTest(0);
    const int64_t supported = hwy::SupportedTargets();
    if ((supported & t.bits) == 0 && t.bits != HWY_SCALAR && t.bits != HWY_EMU128) {
      throw Error(ErrorCode::DeviceUnavailable, "BACKPLANE_CPU_TARGET",
                  fmt::format("target '{}' is compiled but this CPU cannot run it", name));
    }
    hwy::SetSupportedTargetsForTest(t.bits);
    return;
  }
  std::string known;
  for (const std::string& n : RunnableTargets()) known += (known.empty() ? "" : "|") + n;
  ThrowInvalidArgument("BACKPLANE_CPU_TARGET", "target", fmt::format("one of {}", known),
                       fmt::format("'{}'", name));
}

void ApplyTargetFromEnvironment() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char* env = std::getenv("BACKPLANE_CPU_TARGET");
    if (env != nullptr && *env != '\0') ForceTarget(env);
  });
}

}  // namespace backplane::cpu
