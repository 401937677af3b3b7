// The per-op device matrix: every canonical op, as a one-node graph, on a GraphDevice against the
// scalar CPU reference on the same seeded inputs, in every dtype it accepts.
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <set>

#include "backplane/catalog/catalog.hpp"
#include "backplane/conformance.hpp"
#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/error.hpp"
#include "backplane/runtime/executor.hpp"
#include "backplane/tolerance.hpp"
#include "conformance/device_probes.hpp"
#include "conformance/probe_graph.hpp"

namespace backplane::conformance {
namespace {

// Complex tensors as their interleaved (re, im) parts, a real tensor of twice the elements.
Tensor RealView(const Tensor& t) {
  if (!IsComplex(t.dtype())) return t;
  Tensor r(t.dtype() == DType::Complex64 ? DType::Float32 : DType::Float64, {2 * t.numel()});
  std::memcpy(r.data(), t.data(), t.nbytes());
  return r;
}

// Worst error of `got` against `want` in units of the tolerance (> 1 fails); exact for integers.
double Compare(const Tensor& got_in, const Tensor& want_in, double scale, double* max_abs, std::string* where,
               bool nonfinite_alike = false) {
  if (got_in.dtype() != want_in.dtype() || got_in.shape() != want_in.shape()) {
    const Tensor& got = got_in;
    const Tensor& want = want_in;
    *where = fmt::format("type {}{} vs the reference's {}{}", DTypeName(got.dtype()), ShapeToString(got.shape()),
                         DTypeName(want.dtype()), ShapeToString(want.shape()));
    return INFINITY;
  }
  const Tensor got = RealView(got_in), want = RealView(want_in);
  const Tolerance tol = DefaultTolerance(want_in.dtype());
  double worst = 0.0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = got.GetDouble(i), w = want.GetDouble(i);
    if (std::isnan(g) && std::isnan(w)) continue;
    if (nonfinite_alike && !std::isfinite(g) && !std::isfinite(w)) continue;
    if (g == w) continue;
    const double err = std::abs(g - w);
    const double bound = (tol.abs + tol.rel * std::abs(w)) * scale;
    const double ratio = std::isnan(err) ? INFINITY : (bound > 0 ? err / bound : INFINITY);
    if (!std::isnan(err)) *max_abs = std::max(*max_abs, err);
    if (ratio > worst) {
      worst = ratio;
      *where = fmt::format("element {}: {} vs reference {}", i, g, w);
    }
  }
  return worst;
}

std::string MethodOf(const catalog::OpInfo& op) {
  return op.methods.empty() ? "" : catalog::Method(op.methods[0]).QualifiedName();
}

}  // namespace

std::vector<Cell> RunDeviceMatrix(runtime::GraphDevice& device, const std::string& target, const Options& options) {
  std::map<std::string, std::vector<DeviceProbe>> probes = ProbesByOp(DeviceProbes());
  auto reference = cpu::CreateReferenceBackend();
  const std::string device_name = DeviceName(device.device()).substr(0, DeviceName(device.device()).find(':'));
  std::vector<Cell> cells;
  int canonical_index = -1;
  for (const catalog::OpInfo& op : catalog::Ops()) {
    if (!op.alias_of.empty()) continue;
    ++canonical_index;
    if (options.shards > 1 && canonical_index % options.shards != options.shard) continue;
    if (!options.only_op.empty() && catalog::ResolveOp(options.only_op) != &op) continue;
    std::vector<DeviceProbe> mine = ProbesOf(probes, op);
    for (DType dtype : TestedDTypes()) {
      bool any = false;
      Cell cell{op.id, MethodOf(op), device_name, target, std::string(DTypeName(dtype)), "verified", 0.0, ""};
      for (size_t pi = 0; pi < mine.size() && cell.status == "verified"; ++pi) {
        const DeviceProbe& probe = mine[pi];
        if (!Accepts(op, probe, dtype)) continue;
        any = true;
        const std::vector<std::string> outs = ProbeOutputNames(op, probe);
        std::unique_ptr<runtime::Executor> ref_ptr, dev_ptr;
        std::vector<runtime::NodePlacement> placement;
        try {
          const ir::Graph graph = ir::ParseGraph(GraphJson(probe, dtype, outs), "device probe " + op.id);
          ref_ptr = std::make_unique<runtime::Executor>(graph, *reference);
          dev_ptr = std::make_unique<runtime::Executor>(graph, *reference, runtime::ExecutorOptions{.device = &device});
          placement = dev_ptr->Placement(ProbeShapes(probe));
        } catch (const Error& e) {
          cell.status = "not_run";
          cell.note = probes.contains(op.id) ? fmt::format("probe rejected: {}", e.what())
                                             : fmt::format("no probe (the default one is rejected: {})", e.what());
          break;
        }
        runtime::Executor& ref = *ref_ptr;
        runtime::Executor& dev = *dev_ptr;
        std::map<std::string, Tensor> inputs;
        try {
          if (!placement.at(0).fallback.empty()) {
            cell.status = "fallback";
            cell.note = placement.at(0).fallback;
            break;
          }
          inputs = ProbeInputs(op, probe, pi, dtype);
          for (int run = 0; run < probe.runs && cell.status == "verified"; ++run) {
            std::map<std::string, Tensor> want;
            try {
              want = ref.Run(inputs);
            } catch (const Error& e) {
              cell.status = "not_run";
              cell.note = fmt::format("probe rejected by the CPU reference: {}", e.what());
              break;
            }
            const auto got = dev.Run(inputs);
            for (const std::string& name : outs) {
              std::string where;
              const double worst = Compare(got.at(name), want.at(name), probe.tolerance_scale, &cell.max_error, &where);
              if (worst > 1.0) {
                cell.status = "failed";
                cell.note = fmt::format("run {} output {}: {}", run + 1, name, where);
                break;
              }
            }
          }
          // The same probe with NaN, +-Inf and -0 planted in its floating inputs: the device must
          // follow the reference's special-value rules too (skipped when the reference rejects them).
          if (cell.status == "verified" && probe.runs == 1 && IsFloatingPoint(dtype) && probe.special_values != "off") {
            std::map<std::string, Tensor> special = inputs;
            bool planted = false;
            for (size_t i = 0; i < probe.inputs.size(); ++i) {
              if (probe.inputs[i].dtype != "T") continue;
              Tensor t = special.at(fmt::format("in{}", i)).Clone();
              static const double kSpecials[] = {NAN, INFINITY, -INFINITY, -0.0};
              for (int64_t k = 2; k < t.numel(); k += 5) t.SetDouble(k, kSpecials[(k / 5) % 4]);
              planted = planted || t.numel() > 2;
              special[fmt::format("in{}", i)] = t;
            }
            std::map<std::string, Tensor> want;
            bool reference_accepts = planted;
            if (planted) {
              try {
                runtime::Executor fresh_ref(ref.graph(), *reference);
                want = fresh_ref.Run(special);
              } catch (const Error&) {
                reference_accepts = false;
              }
            }
            if (reference_accepts) {
              runtime::Executor fresh_dev(ref.graph(), *reference, runtime::ExecutorOptions{.device = &device});
              const auto got = fresh_dev.Run(special);
              for (const std::string& name : outs) {
                std::string where;
                double ignored = 0;
                if (Compare(got.at(name), want.at(name), probe.tolerance_scale, &ignored, &where,
                            probe.special_values == "nonfinite") > 1.0) {
                  cell.status = "failed";
                  cell.note = fmt::format("with NaN/Inf/-0 inputs, output {}: {}", name, where);
                  break;
                }
              }
            }
          }
        } catch (const Error& e) {
          cell.status = "failed";
          cell.note = e.what();
        }
      }
      if (any) cells.push_back(std::move(cell));
    }
  }
  return cells;
}

}  // namespace backplane::conformance
