#include "backplane/cpu_info.hpp"

#include <fstream>
#include <thread>

// Compile a tiny probe for every Highway target so the dispatcher reports what it would pick.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/cpu_info.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace backplane::HWY_NAMESPACE {
int64_t ProbeTarget() { return HWY_TARGET; }
}  // namespace backplane::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace backplane {
HWY_EXPORT(ProbeTarget);

namespace {

std::string ShortTargetName(int64_t target) {
  switch (target) {
    case HWY_SCALAR:
    case HWY_EMU128: return "scalar";
#if HWY_ARCH_X86
    case HWY_SSSE3: return "ssse3";
    case HWY_SSE4: return "sse4";
    case HWY_AVX2: return "avx2";
    case HWY_AVX3: return "avx512";
    case HWY_AVX3_DL: return "avx512_dl";
#endif
#if HWY_ARCH_ARM
    case HWY_NEON: return "neon";
    case HWY_SVE: return "sve";
    case HWY_SVE2: return "sve2";
    case HWY_SVE_256: return "sve_256";
    case HWY_SVE2_128: return "sve2_128";
#endif
    default: return hwy::TargetName(target);
  }
}

std::string ReadCpuModel() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    for (const char* key : {"model name", "Model", "CPU part"}) {
      if (line.rfind(key, 0) == 0) {
        const auto colon = line.find(':');
        if (colon != std::string::npos) return line.substr(colon + 2);
      }
    }
  }
  return "unknown";
}

std::vector<std::string> ReadFeatures() {
  std::vector<std::string> features;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
#define BP_FEATURE(name) \
  if (__builtin_cpu_supports(name)) features.emplace_back(name);
  BP_FEATURE("sse2")
  BP_FEATURE("ssse3")
  BP_FEATURE("sse4.1")
  BP_FEATURE("sse4.2")
  BP_FEATURE("avx")
  BP_FEATURE("avx2")
  BP_FEATURE("fma")
  BP_FEATURE("bmi2")
  BP_FEATURE("avx512f")
  BP_FEATURE("avx512bw")
  BP_FEATURE("avx512vl")
  BP_FEATURE("avx512dq")
  BP_FEATURE("avx512vnni")
  BP_FEATURE("avx512bf16")
#undef BP_FEATURE
  {
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    while (std::getline(cpuinfo, line)) {
      if (line.rfind("flags", 0) == 0) {
        if (line.find(" f16c") != std::string::npos) features.emplace_back("f16c");
        break;
      }
    }
  }
#elif defined(__aarch64__)
  features.emplace_back("neon");
#endif
  return features;
}

}  // namespace

CpuInfo QueryCpuInfo() {
  CpuInfo info;
  info.model = ReadCpuModel();
  info.features = ReadFeatures();
  const int64_t supported = hwy::SupportedTargets();
  for (int shift = 0; shift < 63; ++shift) {
    const int64_t bit = int64_t{1} << shift;
    const bool compiled = (HWY_TARGETS & bit) != 0;
    const bool is_supported = (supported & bit) != 0;
    if (!compiled && !is_supported) continue;
    if (std::string(hwy::TargetName(bit)) == "Unknown") continue;
    info.targets.push_back({ShortTargetName(bit), hwy::TargetName(bit), compiled, is_supported});
  }
  info.selected = ShortTargetName(HWY_DYNAMIC_DISPATCH(ProbeTarget)());
  const unsigned threads = std::thread::hardware_concurrency();
  info.hardware_threads = threads == 0 ? 1 : static_cast<int>(threads);
  return info;
}

}  // namespace backplane
#endif  // HWY_ONCE
