#include "backplane/conformance.hpp"

#include <fmt/format.h>

#include <map>
#include <set>

#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/cpu/targets.hpp"
#include "backplane/error.hpp"
#include "conformance/runner.hpp"
#include "cpu/kernels/simd.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::conformance {
namespace {

const RunnerRegistry& Runners() {
  static const RunnerRegistry registry = [] {
    RunnerRegistry r;
    RegisterElementwiseRunners(r);
    RegisterActivationRunners(r);
    RegisterReductionRunners(r);
    RegisterNnRunners(r);
    RegisterQuantRunners(r);
    RegisterResearchBinaryRunners(r);
    RegisterPhysicsRunners(r);
    RegisterCausalRunners(r);
    RegisterNormRunners(r);
    RegisterLossRunners(r);
    RegisterTrainingRunners(r);
    RegisterResearchRunners(r);
    RegisterBlockQuantRunners(r);
    RegisterTensorElementwiseRunners(r);
    RegisterTensorAxisRunners(r);
    RegisterTensorIndexRunners(r);
    RegisterPoolNdRunners(r);
    RegisterSpatialRunners(r);
    return r;
  }();
  return registry;
}

struct KernelPair {
  ErasedKernel reference = nullptr;
  ErasedKernel fast = nullptr;
};

KernelPair Kernels(catalog::MethodId id) {
  const cpu::KernelTable& ref = cpu::ref::Table();
  const cpu::KernelTable& fast = cpu::simd::Table();
  switch (id) {
#define BP_KERNEL_PAIR(S, M, F, D)                                   \
  case catalog::MethodId::S##_##M:                                   \
    return {reinterpret_cast<ErasedKernel>(ref.S##_##M), reinterpret_cast<ErasedKernel>(fast.S##_##M)};
    BP_ALL_METHODS(BP_KERNEL_PAIR)
#undef BP_KERNEL_PAIR
  }
  return {};
}

// Restores the default dispatch when the matrix run ends, even on an exception.
struct TargetGuard {
  ~TargetGuard() { cpu::ForceTarget(""); }
};

}  // namespace

std::vector<int64_t> ConformanceSizes(bool quick) {
  // 0, 1, lanes - 1 / lanes / lanes + 1 for 2..16 lanes, odd sizes, and > 64 KiB of f32.
  if (quick) return {0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 33, 1000};
  return {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 1000, 4097, 16411};
}

namespace {

// Runs (or explains why not) one method for every target and dtype, as cells of `op`.
void AddMethodCells(const std::string& op, DTypeSet op_dtypes, const catalog::MethodInfo* method,
                    const std::string& no_method_note, const std::vector<std::string>& targets,
                    const Options& options, std::vector<Cell>& cells,
                    std::map<catalog::MethodId, std::map<std::string, std::map<DType, Measure>>>& results) {
  const KernelPair k = method ? Kernels(method->id) : KernelPair{};
  const auto runner = method ? Runners().find(std::string(method->family)) : Runners().end();
  for (const std::string& target : targets) {
    for (DType dtype : AllDTypes()) {
      if (!op_dtypes.Contains(dtype)) continue;
      Cell cell{op, method ? method->QualifiedName() : "", "cpu", target, std::string(DTypeName(dtype)),
                "not_run", 0.0, ""};
      if (method == nullptr) {
        cell.note = no_method_note;
      } else if (k.fast == nullptr) {
        const std::string reason = cpu::ScalarByDesignReason(method->id);
        cell.note = reason.empty() ? "no SIMD kernel (scalar reference)" : "scalar by design: " + reason;
      } else if (k.reference == nullptr) {
        cell.note = "no reference kernel";
      } else if (runner == Runners().end()) {
        cell.note = fmt::format("no conformance runner for family {}", method->family);
      } else if (!method->dtypes.Contains(dtype)) {
        cell.note = "dtype not accepted by the method";
      } else {
        auto& by_dtype = results[method->id][target];
        auto it = by_dtype.find(dtype);
        if (it == by_dtype.end()) {
          cpu::ForceTarget(target);
          const RunContext context{method->QualifiedName(), dtype, ConformanceSizes(options.quick),
                                   0x5EEDull + static_cast<uint64_t>(method->id)};
          Measure m;
          try {
            m = runner->second(k.reference, k.fast, context);
          } catch (const std::exception& e) {
            m.ok = false;
            m.note = fmt::format("threw: {}", e.what());
          }
          it = by_dtype.emplace(dtype, m).first;
        }
        cell.status = it->second.ok ? "verified" : "failed";
        cell.max_error = it->second.max_error;
        cell.note = it->second.note;
      }
      cells.push_back(std::move(cell));
    }
  }
}

}  // namespace

std::vector<Cell> RunCpuMatrix(const Options& options) {
  std::vector<std::string> targets = options.targets.empty() ? cpu::RunnableTargets() : options.targets;
  TargetGuard guard;
  std::vector<Cell> cells;
  std::map<catalog::MethodId, std::map<std::string, std::map<DType, Measure>>> results;
  std::set<catalog::MethodId> covered;
  for (const catalog::OpInfo& op : catalog::Ops()) {
    if (!op.alias_of.empty()) continue;
    if (!options.only_op.empty() && op.id != options.only_op) continue;
    const bool single = op.link == catalog::LinkKind::Direct && op.methods.size() == 1;
    const catalog::MethodInfo* method = single ? &catalog::Method(op.methods[0]) : nullptr;
    if (method != nullptr) covered.insert(method->id);
    AddMethodCells(op.id, op.dtypes, method,
                   op.link == catalog::LinkKind::GraphOnly ? "graph-only op" : "composite: covered by its methods",
                   targets, options, cells, results);
  }
  // Fast methods reached only through a composite op (e.g. Activation.LeakyReLU under
  // activation.leaky_relu) get cells of their own under that op's ID.
  for (const catalog::OpInfo& op : catalog::Ops()) {
    if (!op.alias_of.empty() || op.methods.size() < 2) continue;
    if (!options.only_op.empty() && op.id != options.only_op) continue;
    for (catalog::MethodId id : op.methods) {
      if (covered.contains(id) || !cpu::simd::Table().Has(id)) continue;
      covered.insert(id);
      AddMethodCells(op.id, catalog::Method(id).dtypes, &catalog::Method(id), "", targets, options, cells, results);
    }
  }
  return cells;
}

nlohmann::json CellsToJson(const std::vector<Cell>& cells) {
  nlohmann::json out = nlohmann::json::array();
  for (const Cell& c : cells) {
    nlohmann::json j = {{"op", c.op},         {"device", c.device}, {"target", c.target},
                        {"dtype", c.dtype},   {"status", c.status}, {"max_error", c.max_error}};
    if (!c.method.empty()) j["method"] = c.method;
    if (!c.note.empty()) j["note"] = c.note;
    out.push_back(j);
  }
  return out;
}

std::vector<Cell> CellsFromJson(const nlohmann::json& json) {
  std::vector<Cell> cells;
  for (const auto& j : json) {
    Cell c;
    c.op = j.at("op");
    c.device = j.at("device");
    c.target = j.at("target");
    c.dtype = j.at("dtype");
    c.status = j.at("status");
    c.max_error = j.at("max_error").is_number() ? j.at("max_error").get<double>() : INFINITY;
    c.method = j.value("method", "");
    c.note = j.value("note", "");
    cells.push_back(std::move(c));
  }
  return cells;
}

nlohmann::json RecordToJson(const Record& r) {
  return {{"cpu_model", r.cpu_model}, {"date", r.date},       {"command", r.command},
          {"targets", r.targets},     {"cells", CellsToJson(r.cells)}};
}

Record RecordFromJson(const nlohmann::json& j) {
  Record r;
  r.cpu_model = j.at("cpu_model");
  r.date = j.at("date");
  r.command = j.at("command");
  r.targets = j.at("targets").get<std::vector<std::string>>();
  r.cells = CellsFromJson(j.at("cells"));
  return r;
}

}  // namespace backplane::conformance
