// The backplane command-line tool.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "backplane/catalog/inventory.hpp"
#include "backplane/cpu_info.hpp"
#include "backplane/error.hpp"

namespace {

constexpr int kUsageError = 2;

int RunInfo() {
  const backplane::CpuInfo cpu = backplane::QueryCpuInfo();
  fmt::print("backplane {}\n", BACKPLANE_VERSION);
  fmt::print("cpu: {}\n", cpu.model);
  std::string features;
  for (const std::string& f : cpu.features) features += (features.empty() ? "" : " ") + f;
  fmt::print("isa features: {}\n", features.empty() ? "(none detected)" : features);
  std::string compiled, supported;
  for (const backplane::SimdTarget& t : cpu.targets) {
    if (t.compiled) compiled += (compiled.empty() ? "" : " ") + t.name;
    if (t.compiled && t.supported) supported += (supported.empty() ? "" : " ") + t.name;
  }
  fmt::print("simd targets compiled: {}\n", compiled);
  fmt::print("simd targets supported here: {}\n", supported);
  fmt::print("simd target selected: {}\n", cpu.selected);
  const char* env_threads = std::getenv("BACKPLANE_NUM_THREADS");
  fmt::print("threads: {} (hardware {}{})\n", env_threads ? env_threads : std::to_string(cpu.hardware_threads),
             cpu.hardware_threads, env_threads ? ", set by BACKPLANE_NUM_THREADS" : "");
  fmt::print("blas: none linked (dense GEMM runs the scalar reference)\n");
  return 0;
}

int RunInventory(const std::string& format) {
  const auto devices = backplane::catalog::BuiltDevices();
  if (format == "json") {
    std::cout << backplane::catalog::InventoryJson(devices).dump(2) << "\n";
  } else {
    std::cout << backplane::catalog::InventoryMarkdown(devices);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Backplane: a compute backend for AI research", "backplane"};
  app.require_subcommand(1);
  app.set_version_flag("--version", BACKPLANE_VERSION);

  CLI::App* info = app.add_subcommand("info", "Library version, CPU, SIMD targets, threads, BLAS");
  std::string format = "md";
  CLI::App* inventory =
      app.add_subcommand("inventory", "Print the catalog: methods, operation IDs, links");
  inventory->add_option("--format", format, "Output format")
      ->check(CLI::IsMember({"md", "json"}));

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string message = e.what();
    if (message.empty()) message = "missing subcommand";
    std::cerr << "backplane: error: " << message << "\n"
              << "usage: backplane {info | inventory [--format md|json]} (see --help)\n";
    return kUsageError;
  }

  try {
    if (info->parsed()) return RunInfo();
    if (inventory->parsed()) return RunInventory(format);
  } catch (const backplane::Error& e) {
    std::cerr << "backplane: error: " << e.what() << "\n";
    return 1;
  }
  return kUsageError;
}
