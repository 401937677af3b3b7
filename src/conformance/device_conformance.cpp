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

namespace backplane::conformance {
namespace {

// The dtypes the device matrix runs, in this order.
const std::vector<DType>& TestedDTypes() {
  static const std::vector<DType> d = {DType::Float64, DType::Float32, DType::Float16, DType::BFloat16,
                                       DType::Float8E4M3, DType::Float8E5M2, DType::Int64, DType::Int32,
                                       DType::Int16,   DType::Int8,    DType::Int4,     DType::Uint64,
                                       DType::Uint32,  DType::Uint16,  DType::Uint8,    DType::Bool,
                                       DType::Complex64, DType::Complex128};
  return d;
}

DeviceProbe DefaultProbe(const catalog::OpInfo& op) {
  DeviceProbe p{.op = op.id};
  for (const std::string& in : op.inputs) {
    if (in.ends_with("?")) break;
    p.inputs.push_back({"T", {4, 6}});
  }
  return p;
}

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return h;
}

// Complex tensors as their interleaved (re, im) parts, a real tensor of twice the elements.
Tensor RealView(const Tensor& t) {
  if (!IsComplex(t.dtype())) return t;
  Tensor r(t.dtype() == DType::Complex64 ? DType::Float32 : DType::Float64, {2 * t.numel()});
  std::memcpy(r.data(), t.data(), t.nbytes());
  return r;
}

Tensor RandomTensor(DType dtype, const Shape& shape, double lo, double hi, uint64_t seed);

Tensor RandomComplex(DType dtype, const Shape& shape, double lo, double hi, uint64_t seed) {
  Tensor t(dtype, shape);
  const Tensor parts = RandomTensor(dtype == DType::Complex64 ? DType::Float32 : DType::Float64, {2 * t.numel()}, lo, hi, seed);
  std::memcpy(t.data(), parts.data(), t.nbytes());
  return t;
}

Tensor RandomTensor(DType dtype, const Shape& shape, double lo, double hi, uint64_t seed) {
  if (IsComplex(dtype)) return RandomComplex(dtype, shape, lo, hi, seed);
  Tensor t(dtype, shape);
  uint64_t s = seed | 1;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    const double u = static_cast<double>(s >> 11) / 9007199254740992.0;
    double v = lo + (hi - lo) * u;
    if (dtype == DType::Bool) v = u < 0.5 ? 0.0 : 1.0;
    if (IsInteger(dtype)) v = std::round(v);
    t.SetDouble(i, v);
  }
  return t;
}

std::string GraphJson(const DeviceProbe& probe, DType dtype, const std::vector<std::string>& outputs) {
  std::string inputs, names;
  for (size_t i = 0; i < probe.inputs.size(); ++i) {
    const ProbeInput& in = probe.inputs[i];
    if (in.dtype.empty()) {
      names += fmt::format("{}\"\"", i ? ", " : "");
      continue;
    }
    const std::string dt = in.dtype == "T" ? std::string(DTypeName(dtype)) : in.dtype;
    std::string shape;
    for (size_t k = 0; k < in.shape.size(); ++k) shape += (k ? ", " : "") + std::to_string(in.shape[k]);
    inputs += fmt::format("{}{{\"name\": \"in{}\", \"dtype\": \"{}\", \"shape\": [{}]}}", inputs.empty() ? "" : ", ", i, dt,
                          shape);
    names += fmt::format("{}\"in{}\"", i ? ", " : "", i);
  }
  std::string outs;
  for (size_t i = 0; i < outputs.size(); ++i) outs += fmt::format("{}\"{}\"", i ? ", " : "", outputs[i]);
  return fmt::format(
      R"({{"format": "backplane.graph", "version": 1, "name": "probe", "inputs": [{}], "params": {}, "nodes": [{{"op": "{}", "name": "op", "inputs": [{}], "outputs": [{}], "attrs": {}}}], "outputs": [{}]}})",
      inputs, probe.params, probe.op, names, outs, probe.attrs, outs);
}

bool Accepts(const catalog::OpInfo& op, const DeviceProbe& probe, DType dtype) {
  if (!probe.dtypes.empty()) {
    for (DType d : probe.dtypes) {
      if (d == dtype) return true;
    }
    return false;
  }
  return op.dtypes.Contains(dtype);
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

DType ProbeDType(const ProbeInput& in, DType tested) {
  if (in.dtype == "T") return tested;
  const std::optional<DType> d = DTypeFromName(in.dtype);
  if (!d) throw Error(ErrorCode::Internal, "device probes", fmt::format("unknown dtype '{}'", in.dtype));
  return *d;
}

std::string MethodOf(const catalog::OpInfo& op) {
  return op.methods.empty() ? "" : catalog::Method(op.methods[0]).QualifiedName();
}

}  // namespace

std::vector<Cell> RunDeviceMatrix(runtime::GraphDevice& device, const std::string& target, const Options& options) {
  std::map<std::string, std::vector<DeviceProbe>> probes;
  for (DeviceProbe& p : DeviceProbes()) {
    const catalog::OpInfo* op = catalog::ResolveOp(p.op);
    if (op == nullptr) throw Error(ErrorCode::Internal, "device probes", fmt::format("unknown op '{}'", p.op));
    p.op = op->id;
    probes[op->id].push_back(std::move(p));
  }
  auto reference = cpu::CreateReferenceBackend();
  const std::string device_name = DeviceName(device.device()).substr(0, DeviceName(device.device()).find(':'));
  std::vector<Cell> cells;
  int canonical_index = -1;
  for (const catalog::OpInfo& op : catalog::Ops()) {
    if (!op.alias_of.empty()) continue;
    ++canonical_index;
    if (options.shards > 1 && canonical_index % options.shards != options.shard) continue;
    if (!options.only_op.empty() && catalog::ResolveOp(options.only_op) != &op) continue;
    std::vector<DeviceProbe> mine = probes.contains(op.id) ? probes[op.id] : std::vector<DeviceProbe>{DefaultProbe(op)};
    for (DType dtype : TestedDTypes()) {
      bool any = false;
      Cell cell{op.id, MethodOf(op), device_name, target, std::string(DTypeName(dtype)), "verified", 0.0, ""};
      for (size_t pi = 0; pi < mine.size() && cell.status == "verified"; ++pi) {
        const DeviceProbe& probe = mine[pi];
        if (!Accepts(op, probe, dtype)) continue;
        any = true;
        const runtime::Arity arity = runtime::OpArity(op);
        const int n_out = probe.outputs > 0 ? probe.outputs : std::max(1, arity.min_outputs);
        std::vector<std::string> outs;
        for (int o = 0; o < n_out; ++o) outs.push_back(fmt::format("out{}", o));
        std::unique_ptr<runtime::Executor> ref_ptr, dev_ptr;
        std::vector<runtime::NodePlacement> placement;
        try {
          const ir::Graph graph = ir::ParseGraph(GraphJson(probe, dtype, outs), "device probe " + op.id);
          ref_ptr = std::make_unique<runtime::Executor>(graph, *reference);
          dev_ptr = std::make_unique<runtime::Executor>(graph, *reference, runtime::ExecutorOptions{.device = &device});
          std::map<std::string, Shape> shapes;
          for (size_t i = 0; i < probe.inputs.size(); ++i) {
            if (!probe.inputs[i].dtype.empty()) shapes[fmt::format("in{}", i)] = probe.inputs[i].shape;
          }
          placement = dev_ptr->Placement(shapes);
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
          for (size_t i = 0; i < probe.inputs.size(); ++i) {
            const ProbeInput& in = probe.inputs[i];
            if (in.dtype.empty()) continue;
            const DType dt = ProbeDType(in, dtype);
            const uint64_t seed = Mix(Mix(Mix(std::hash<std::string>{}(op.id), static_cast<uint64_t>(dtype)), pi), i);
            inputs[fmt::format("in{}", i)] = RandomTensor(dt, in.shape, in.lo, in.hi, seed);
          }
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
