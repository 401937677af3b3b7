// backplane verify: run the conformance matrix here; optionally write the generated matrices.
#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <iostream>
#include <memory>

#include "backplane/atomic_file.hpp"
#include "backplane/conformance.hpp"
#include "backplane/cpu/targets.hpp"
#include "backplane/cpu_info.hpp"
#include "backplane/error.hpp"
#include "backplane/runtime/graph_device.hpp"
#include "commands.hpp"

namespace backplane::cli {
namespace {

struct VerifyOptions {
  std::string format = "md";
  bool quick = false;
  std::vector<std::string> targets;
  std::string op;
  std::string write_docs;
  std::string record_file;
  std::string machine;
  bool from_records = false;
  std::string device = "cpu";
};


void WriteFile(const std::string& path, const std::string& text) { io::WriteFileAtomically(path, {text}); }

// The three generated documents from the records in `dir` (verify-cpu.json, verify-arm.json).
void WriteMatrices(const std::string& dir) {
  const auto records = conformance::LoadRecords(dir);
  WriteFile(dir + "/cpu-dispatch-matrix.md", conformance::CpuDispatchMatrixMarkdown(records));
  WriteFile(dir + "/device-backend-matrix.md", conformance::DeviceBackendMatrixMarkdown(records));
  WriteFile(dir + "/backend-coverage.md", conformance::BackendCoverageMarkdown(records));
}

int Verify(const VerifyOptions& o) {
  if (o.from_records) {
    if (o.write_docs.empty()) ThrowInvalidArgument("backplane verify", "--from-records", "--write-docs DIR as well", "no --write-docs");
    WriteMatrices(o.write_docs);
    return 0;
  }
  conformance::Options options;
  options.quick = o.quick;
  options.targets = o.targets;
  options.only_op = o.op;
  const std::unique_ptr<runtime::GraphDevice> device = runtime::OpenGraphDevice(o.device);
  std::string device_target;  // "xla-cpu": the device kind and its platform
  if (device) {
    std::string platform = "device";
    for (const auto& [key, value] : device->Properties()) {
      if (key == "platform") platform = value.substr(0, value.find(' '));
    }
    device_target = fmt::format("{}-{}", o.device.substr(0, o.device.find(':')), platform);
  }
  const auto cells = device ? conformance::RunDeviceMatrix(*device, device_target, options)
                            : conformance::RunCpuMatrix(options);
  int failed = 0;
  for (const auto& c : cells) failed += c.status == "failed" ? 1 : 0;
  if (!o.write_docs.empty() || !o.record_file.empty()) {
    conformance::Record record;
    record.cpu_model = o.machine.empty() ? QueryCpuInfo().model : o.machine;
    const std::time_t now = std::time(nullptr);
    char date[16];
    std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
    record.date = date;
    const std::string device_flag = device ? " --device " + o.device : "";
    record.command = o.write_docs.empty()
                         ? fmt::format("backplane verify{}{} --record", device_flag, o.quick ? " --quick" : "")
                         : fmt::format("backplane verify{} --write-docs docs", device_flag);
    record.targets = device ? std::vector<std::string>{device_target}
                            : options.targets.empty() ? cpu::RunnableTargets() : options.targets;
    record.cells = cells;
    const std::string json = conformance::RecordToJson(record).dump(1) + "\n";
    if (!o.record_file.empty()) WriteFile(o.record_file, json);
    if (!o.write_docs.empty()) {
      const std::string kind = device ? o.device.substr(0, o.device.find(':')) : "cpu";
      WriteFile(o.write_docs + "/verify-" + kind + ".json", json);
      WriteMatrices(o.write_docs);
    }
  } else if (o.format == "json") {
    std::cout << conformance::CellsToJson(cells).dump(1) << "\n";
  } else {
    std::cout << conformance::CellsMarkdown(cells);
  }
  if (failed > 0) {
    std::cerr << fmt::format("backplane verify: {} cells failed\n", failed);
    return 1;
  }
  return 0;
}

}  // namespace

void AddVerifyCommand(CLI::App& app) {
  auto o = std::make_shared<VerifyOptions>();
  CLI::App* cmd = app.add_subcommand("verify", "Run the conformance matrix (fast kernels vs the scalar reference)");
  cmd->add_option("--format", o->format, "Output format")->check(CLI::IsMember({"md", "json"}));
  cmd->add_flag("--quick", o->quick, "Fewer, smaller sizes");
  cmd->add_option("--target", o->targets, "Only these targets (repeatable)");
  cmd->add_option("--op", o->op, "Only this operation ID");
  cmd->add_option("--write-docs", o->write_docs,
                  "Write this run's record (verify-cpu.json) and the three matrices (also from verify-arm.json "
                  "if present) into this folder");
  cmd->add_option("--record", o->record_file, "Write this run's record (cells and machine) to this JSON file");
  cmd->add_option("--machine", o->machine, "Machine description for the record (default: the CPU model)");
  cmd->add_option("--device", o->device,
                  "cpu (default: the SIMD matrix), xla[:N] or cuda[:N]: every op as a one-node graph on the device "
                  "against the scalar reference (record: verify-xla.json)");
  cmd->add_flag("--from-records", o->from_records,
                "With --write-docs: run nothing, regenerate the three matrices from the records there");
  cmd->callback([o] {
    if (Verify(*o) != 0) throw Error(ErrorCode::Internal, "backplane verify", "conformance failures (see above)");
  });
}

}  // namespace backplane::cli
