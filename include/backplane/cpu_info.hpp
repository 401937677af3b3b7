// What this CPU is and which SIMD targets the build can use on it.
#pragma once

#include <string>
#include <vector>

namespace backplane {

struct SimdTarget {
  std::string name;       // as in BACKPLANE_CPU_TARGET: scalar, sse4, avx2, avx512, neon, sve, ...
  std::string hwy_name;   // Highway's own name, e.g. "AVX2"
  bool compiled = false;  // code for it is in this binary
  bool supported = false; // this CPU can run it
};

struct CpuInfo {
  std::string model;
  std::vector<std::string> features;  // ISA extensions relevant to kernels
  std::vector<SimdTarget> targets;    // every target Highway knows for this architecture
  std::string selected;               // what dynamic dispatch picks now
  int hardware_threads = 1;
};

CpuInfo QueryCpuInfo();

}  // namespace backplane
