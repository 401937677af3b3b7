// The dispatch audit: every probe of every canonical op, as a one-node graph through the
// Executor, on the CPU backend behind a RecordingBackend. What it records is what the lowering
// really calls, the "runs" column of the inventory.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <set>

#include "backplane/conformance.hpp"
#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/error.hpp"
#include "backplane/ir/graph.hpp"
#include "backplane/runtime/executor.hpp"
#include "backplane/runtime/recording_backend.hpp"
#include "conformance/probe_graph.hpp"

namespace backplane::conformance {

std::vector<OpDispatch> RunDispatchAudit() {
  std::vector<DeviceProbe> all = DeviceProbes();
  for (DeviceProbe& p : DispatchProbes()) all.push_back(std::move(p));
  std::map<std::string, std::vector<DeviceProbe>> probes = ProbesByOp(std::move(all));
  const std::unique_ptr<Backend> cpu = cpu::CreateBackend();
  runtime::RecordingBackend recorder(*cpu);
  std::vector<OpDispatch> audit;
  for (const catalog::OpInfo& op : catalog::Ops()) {
    if (!op.alias_of.empty()) continue;
    OpDispatch row;
    row.op = op.id;
    for (catalog::MethodId id : op.methods) row.linked.push_back(catalog::Method(id).QualifiedName());
    const std::vector<DeviceProbe> mine = ProbesOf(probes, op);
    std::set<catalog::MethodId> called;
    for (size_t pi = 0; pi < mine.size(); ++pi) {
      const DeviceProbe& probe = mine[pi];
      for (DType dtype : TestedDTypes()) {
        if (!Accepts(op, probe, dtype)) continue;
        recorder.Clear();
        try {
          const ir::Graph graph =
              ir::ParseGraph(GraphJson(probe, dtype, ProbeOutputNames(op, probe)), "dispatch probe " + op.id);
          runtime::Executor executor(graph, recorder);
          const std::map<std::string, Tensor> inputs = ProbeInputs(op, probe, pi, dtype);
          for (int run = 0; run < probe.runs; ++run) executor.Run(inputs);
          ++row.runs;
        } catch (const Error& e) {
          row.rejected.push_back(fmt::format("probe {} in {}: {}", pi + 1, DTypeName(dtype), e.what()));
          continue;
        }
        for (catalog::MethodId id : recorder.Called()) called.insert(id);
      }
    }
    for (catalog::MethodId id : called) row.called.push_back(catalog::Method(id).QualifiedName());
    audit.push_back(std::move(row));
  }
  return audit;
}

std::vector<std::string> UnexercisedLinks(const OpDispatch& row) {
  std::vector<std::string> missing;
  for (const std::string& m : row.linked) {
    if (std::find(row.called.begin(), row.called.end(), m) == row.called.end()) missing.push_back(m);
  }
  return missing;
}

catalog::DispatchRecord ToDispatchRecord(const std::vector<OpDispatch>& audit) {
  catalog::DispatchRecord record;
  for (const OpDispatch& row : audit) record[row.op] = row.called;
  return record;
}

}  // namespace backplane::conformance
