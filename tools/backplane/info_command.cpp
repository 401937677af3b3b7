#include <fmt/format.h>

#include <cblas.h>

#include <cstdlib>
#include <string>

#include "backplane/cpu/threads.hpp"
#include "backplane/cpu_info.hpp"
#include "backplane/error.hpp"
#include "backplane/runtime/graph_device.hpp"
#include "commands.hpp"
#ifdef BACKPLANE_HAVE_CUDA
#include "backplane/cuda/cuda_backend.hpp"
#endif

namespace backplane::cli {

void AddInfoCommand(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("info", "Library version, CPU, SIMD targets, threads, BLAS, devices");
  cmd->callback([] {
    const CpuInfo cpu = QueryCpuInfo();
    fmt::print("backplane {}\n", BACKPLANE_VERSION);
    fmt::print("cpu: {}\n", cpu.model);
    std::string features;
    for (const std::string& f : cpu.features) features += (features.empty() ? "" : " ") + f;
    fmt::print("isa features: {}\n", features.empty() ? "(none detected)" : features);
    std::string compiled, supported;
    for (const SimdTarget& t : cpu.targets) {
      if (t.compiled) compiled += (compiled.empty() ? "" : " ") + t.name;
      if (t.compiled && t.supported) supported += (supported.empty() ? "" : " ") + t.name;
    }
    fmt::print("simd targets compiled: {}\n", compiled);
    fmt::print("simd targets supported here: {}\n", supported);
    fmt::print("simd target selected: {}\n", cpu.selected);
    const char* env_threads = std::getenv("BACKPLANE_NUM_THREADS");
    fmt::print("threads: {} (hardware {}{})\n", cpu::NumThreads(), cpu.hardware_threads,
               env_threads ? ", set by BACKPLANE_NUM_THREADS" : "");
    fmt::print("blas: {}\n", openblas_get_config());
    // Graph devices: each one this build has is opened, so a missing or broken plugin shows here.
    fmt::print("devices: cpu");
    for (const std::string& name : runtime::BuiltGraphDevices()) fmt::print(" {}", name);
    fmt::print("\n");
#ifdef BACKPLANE_HAVE_CUDA
    {
      std::string why;
      const auto gpus = cuda::VisibleGpus(&why);
      fmt::print("cuda gpus: {}{} ({}; code for {})\n", gpus.size(), gpus.empty() ? ", " + why : "", cuda::Versions(),
                 cuda::BuiltArchitectures());
      for (const cuda::Gpu& g : gpus) {
        fmt::print("  cuda:{}: {}, compute capability {}.{}, {:.1f} GiB, {} multiprocessors\n", g.index, g.name,
                   g.compute_major, g.compute_minor, g.memory_bytes / 1073741824.0, g.multiprocessors);
      }
    }
#endif
    for (const std::string& name : runtime::BuiltGraphDevices()) {
      try {
        const auto device = runtime::OpenGraphDevice(name);
        fmt::print("{}: {}\n", name, DeviceName(device->device()));
        for (const auto& [key, value] : device->Properties()) fmt::print("  {}: {}\n", key, value);
      } catch (const Error& e) {
        fmt::print("{}: unavailable: {}\n", name, e.what());
      }
    }
  });
}

}  // namespace backplane::cli
