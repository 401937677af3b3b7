#include "conformance/probe_graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>

#include "backplane/error.hpp"
#include "backplane/runtime/op_registry.hpp"

namespace backplane::conformance {
namespace {

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return h;
}

DType ProbeDType(const ProbeInput& in, DType tested) {
  if (in.dtype == "T") return tested;
  const std::optional<DType> d = DTypeFromName(in.dtype);
  if (!d) throw Error(ErrorCode::Internal, "device probes", fmt::format("unknown dtype '{}'", in.dtype));
  return *d;
}

Tensor RandomComplex(DType dtype, const Shape& shape, double lo, double hi, uint64_t seed) {
  Tensor t(dtype, shape);
  const Tensor parts = RandomTensor(dtype == DType::Complex64 ? DType::Float32 : DType::Float64, {2 * t.numel()}, lo, hi, seed);
  std::memcpy(t.data(), parts.data(), t.nbytes());
  return t;
}

}  // namespace

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

std::map<std::string, std::vector<DeviceProbe>> ProbesByOp(std::vector<DeviceProbe> probes) {
  std::map<std::string, std::vector<DeviceProbe>> by_op;
  for (DeviceProbe& p : probes) {
    const catalog::OpInfo* op = catalog::ResolveOp(p.op);
    if (op == nullptr) throw Error(ErrorCode::Internal, "device probes", fmt::format("unknown op '{}'", p.op));
    p.op = op->id;
    by_op[op->id].push_back(std::move(p));
  }
  return by_op;
}

std::vector<DeviceProbe> ProbesOf(const std::map<std::string, std::vector<DeviceProbe>>& by_op,
                                  const catalog::OpInfo& op) {
  const auto it = by_op.find(op.id);
  return it != by_op.end() ? it->second : std::vector<DeviceProbe>{DefaultProbe(op)};
}

std::vector<std::string> ProbeOutputNames(const catalog::OpInfo& op, const DeviceProbe& probe) {
  const runtime::Arity arity = runtime::OpArity(op);
  const int n_out = probe.outputs > 0 ? probe.outputs : std::max(1, arity.min_outputs);
  std::vector<std::string> outs;
  for (int o = 0; o < n_out; ++o) outs.push_back(fmt::format("out{}", o));
  return outs;
}

std::map<std::string, Tensor> ProbeInputs(const catalog::OpInfo& op, const DeviceProbe& probe, size_t probe_index,
                                          DType dtype) {
  std::map<std::string, Tensor> inputs;
  for (size_t i = 0; i < probe.inputs.size(); ++i) {
    const ProbeInput& in = probe.inputs[i];
    if (in.dtype.empty()) continue;
    const DType dt = ProbeDType(in, dtype);
    const uint64_t seed = Mix(Mix(Mix(std::hash<std::string>{}(op.id), static_cast<uint64_t>(dtype)), probe_index), i);
    inputs[fmt::format("in{}", i)] = RandomTensor(dt, in.shape, in.lo, in.hi, seed);
  }
  return inputs;
}

std::map<std::string, Shape> ProbeShapes(const DeviceProbe& probe) {
  std::map<std::string, Shape> shapes;
  for (size_t i = 0; i < probe.inputs.size(); ++i) {
    if (!probe.inputs[i].dtype.empty()) shapes[fmt::format("in{}", i)] = probe.inputs[i].shape;
  }
  return shapes;
}

}  // namespace backplane::conformance
