#include "backplane/runtime/executor.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <numbers>
#include <set>

#include "backplane/catalog/catalog.hpp"
#include "backplane/error.hpp"
#include "backplane/io.hpp"
#include "backplane/memory_limit.hpp"
#include "backplane/random.hpp"

namespace backplane::runtime {
namespace {

std::string GraphWhere(const ir::Graph& g) {
  return fmt::format("graph{}", g.name.empty() ? "" : " '" + g.name + "'");
}

// Tensors of the .safetensors files parameters read, by path: each file is read once.
using FileCache = std::map<std::string, std::map<std::string, Tensor>>;

Tensor InitParam(const ir::Graph& g, const ir::ParamSpec& p, FileCache& files) {
  Tensor t(p.dtype, p.shape);
  const ir::ParamInit& init = p.init;
  const int64_t n = t.numel();
  if (init.kind == "zeros") return t;
  if (init.kind == "file") {
    const std::filesystem::path path = std::filesystem::path(g.base_dir) / init.file;
    auto cached = files.find(path.string());
    if (cached == files.end()) cached = files.emplace(path.string(), io::ReadSafetensors(path.string())).first;
    const auto& tensors = cached->second;
    const auto it = tensors.find(init.tensor);
    if (it == tensors.end()) {
      throw Error(ErrorCode::InvalidArgument, GraphWhere(g),
                  fmt::format("parameter '{}': tensor '{}' not found in {}", p.name, init.tensor, path.string()));
    }
    if (it->second.dtype() != p.dtype || it->second.shape() != p.shape) {
      throw Error(ErrorCode::ShapeMismatch, GraphWhere(g),
                  fmt::format("parameter '{}' is {}{} but {} holds {}{}", p.name, DTypeName(p.dtype),
                              ShapeToString(p.shape), path.string(), DTypeName(it->second.dtype()),
                              ShapeToString(it->second.shape())));
    }
    return it->second.Clone();
  }
  double xavier_bound = 0.0;
  if (init.kind == "xavier_uniform") {
    // fan_in + fan_out over the last two dims (symmetric, so [in, out] and [out, in] agree).
    const int64_t receptive = p.shape.size() > 2 ? NumElements(std::span(p.shape).subspan(2)) : 1;
    const int64_t fan_a = p.shape.empty() ? 1 : p.shape[0] * (p.shape.size() > 2 ? receptive : 1);
    const int64_t fan_b = p.shape.size() < 2 ? 1 : p.shape[1] * receptive;
    xavier_bound = std::sqrt(6.0 / static_cast<double>(std::max<int64_t>(1, fan_a + fan_b)));
  }
  for (int64_t i = 0; i < n; ++i) {
    const auto idx = static_cast<uint64_t>(i);
    double value = 0.0;
    if (init.kind == "ones") {
      value = 1.0;
    } else if (init.kind == "constant") {
      value = init.value;
    } else if (init.kind == "normal") {
      // Box-Muller on two Philox uniforms (streams 1 and 2).
      const double u1 = 1.0 - PhiloxUniformDouble(init.seed, 1, idx);
      const double u2 = PhiloxUniformDouble(init.seed, 2, idx);
      value = init.mean + init.std * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
    } else if (init.kind == "uniform") {
      value = init.low + (init.high - init.low) * PhiloxUniformDouble(init.seed, 1, idx);
    } else if (init.kind == "xavier_uniform") {
      value = xavier_bound * (2.0 * PhiloxUniformDouble(init.seed, 1, idx) - 1.0);
    }
    t.SetDouble(i, value);
  }
  return t;
}

uint64_t TypeBytes(const TensorType& type) { return DTypeStorageBytes(type.dtype, NumElements(type.shape)); }

void CheckFinite(const std::string& where, const std::string& name, const Tensor& t) {
  if (!IsFloatingPoint(t.dtype())) return;
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (!std::isfinite(t.GetDouble(i))) {
      throw Error(ErrorCode::InvalidArgument, where,
                  fmt::format("parameter '{}' element {} is {}", name, i, t.GetDouble(i)));
    }
  }
}

}  // namespace

Executor::Executor(ir::Graph graph, Backend& backend, ExecutorOptions options)
    : graph_(std::move(graph)), backend_(backend), options_(options) {
  // Structural verification up front (names, arity, cycles, shape rules with placeholders).
  verified_ = VerifyGraph(graph_);
  node_state_.resize(graph_.nodes.size());
  const std::string where = GraphWhere(graph_);
  for (const ir::ParamSpec& p : graph_.params) {
    param_bytes_ = CheckedAdd(param_bytes_, TypeBytes({p.dtype, p.shape}), where, "parameter bytes");
  }
  CheckAllocation(where, param_bytes_, "parameter storage");
  FileCache files;
  for (const ir::ParamSpec& p : graph_.params) {
    params_.tensors[p.name] = InitParam(graph_, p, files);
    params_.trainable[p.name] = p.trainable;
    params_.frozen[p.name] = false;
    if (options_.check_finite_params) CheckFinite(GraphWhere(graph_), p.name, params_.tensors[p.name]);
  }
}

void Executor::LoadParams(const std::map<std::string, Tensor>& tensors) {
  for (const auto& [name, t] : tensors) {
    const auto it = params_.tensors.find(name);
    if (it == params_.tensors.end()) {
      throw Error(ErrorCode::InvalidArgument, GraphWhere(graph_), fmt::format("unknown parameter '{}'", name));
    }
    if (it->second.dtype() != t.dtype() || it->second.shape() != t.shape()) {
      throw Error(ErrorCode::ShapeMismatch, GraphWhere(graph_),
                  fmt::format("parameter '{}' is {}{}, got {}{}", name, DTypeName(it->second.dtype()),
                              ShapeToString(it->second.shape()), DTypeName(t.dtype()), ShapeToString(t.shape())));
    }
    if (options_.check_finite_params) CheckFinite(GraphWhere(graph_), name, t);
  }
  for (const auto& [name, t] : tensors) {
    Tensor& dst = params_.tensors[name];
    if (dst.on_host() && t.on_host()) {
      std::memcpy(dst.data(), t.data(), t.nbytes());
    } else {
      dst = t.Clone();  // a device-resident parameter is replaced; the next run uploads it
    }
  }
}

std::map<std::string, Tensor> Executor::SaveParams() const {
  std::map<std::string, Tensor> out;
  for (const auto& [name, t] : params_.tensors) out[name] = t.ToHost();
  std::set<std::string> device_nodes;
  for (const PlacedSegment& seg : segments_) {
    for (const SegmentNode& n : seg.segment.nodes) device_nodes.insert(n.node->name);
  }
  for (const auto& [key, t] : device_state_) {
    if (device_nodes.contains(key.substr(0, key.rfind('/')))) out[key] = t.ToHost();
  }
  for (size_t i = 0; i < node_state_.size(); ++i) {
    if (device_nodes.contains(graph_.nodes[i].name)) continue;
    for (const auto& [key, t] : node_state_[i].tensors) out[graph_.nodes[i].name + "/" + key] = t;
    for (const auto& [key, v] : node_state_[i].scalars) {
      const double value = v;
      out[graph_.nodes[i].name + "/" + key] = Tensor::FromDoubles(DType::Float64, {}, std::span(&value, 1));
    }
  }
  return out;
}

void Executor::LoadState(const std::map<std::string, Tensor>& tensors) {
  for (size_t i = 0; i < graph_.nodes.size(); ++i) {
    const std::string prefix = graph_.nodes[i].name + "/";
    for (const auto& [name, t] : tensors) {
      if (!name.starts_with(prefix)) continue;
      const std::string key = name.substr(prefix.size());
      if (t.dtype() == DType::Float64 && t.rank() == 0 && !node_state_[i].tensors.contains(key)) {
        node_state_[i].scalars[key] = t.GetDouble(0);
      } else {
        node_state_[i].tensors[key] = t.Clone();
      }
      if (options_.device != nullptr) device_state_[name] = t.Clone();  // uploaded by the next run
    }
  }
}

void Executor::Plan(const std::map<std::string, Shape>& input_shapes) {
  pool_.clear();  // buffers of the previous shapes would not match
  verified_ = VerifyGraph(graph_, input_shapes);
  planned_shapes_ = input_shapes;
  param_types_.clear();
  for (const ir::ParamSpec& p : graph_.params) param_types_[p.name] = {p.dtype, p.shape};
  planned_ = true;
  // Liveness: a node output dies after its last reader (graph outputs never die).
  std::map<std::string, size_t> last_use;
  for (size_t step = 0; step < verified_.order.size(); ++step) {
    for (const std::string& name : graph_.nodes[verified_.order[step]].inputs) last_use[name] = step;
  }
  release_after_.assign(verified_.order.size(), {});
  std::set<std::string> keep(graph_.outputs.begin(), graph_.outputs.end());
  for (size_t step = 0; step < verified_.order.size(); ++step) {
    for (const std::string& out : graph_.nodes[verified_.order[step]].outputs) {
      if (keep.contains(out)) continue;
      const auto it = last_use.find(out);
      release_after_[it == last_use.end() ? step : it->second].push_back(out);
    }
  }
  // Peak memory of a run: the parameters plus every node-output buffer, reused as Run reuses
  // them (a released buffer serves a later output of the same byte size).
  uint64_t buffers = 0, largest = 0;
  const ir::Node* largest_node = nullptr;
  std::string largest_output;
  std::multiset<uint64_t> free_sizes;
  for (size_t step = 0; step < verified_.order.size(); ++step) {
    const ir::Node& node = graph_.nodes[verified_.order[step]];
    for (const std::string& out : node.outputs) {
      const uint64_t bytes = TypeBytes(verified_.types.at(out));
      if (bytes > largest || largest_node == nullptr) {
        largest = bytes;
        largest_node = &node;
        largest_output = out;
      }
      const auto it = free_sizes.find(bytes);
      if (it != free_sizes.end()) {
        free_sizes.erase(it);
      } else {
        buffers = CheckedAdd(buffers, bytes, GraphWhere(graph_), "planned buffer bytes");
      }
    }
    for (const std::string& dead : release_after_[step]) free_sizes.insert(TypeBytes(verified_.types.at(dead)));
  }
  planned_peak_bytes_ = CheckedAdd(param_bytes_, buffers, GraphWhere(graph_), "planned peak bytes");
  if (options_.device == nullptr) {
    planned_ = false;  // a refused plan is not kept
    // The largest buffer names the node most likely at fault (e.g. a huge size attribute).
    const std::string culprit =
        largest_node == nullptr ? ""
                                : fmt::format("; the largest is output '{}' of {} node '{}' ({})", largest_output,
                                              largest_node->op, largest_node->name, FormatBytes(largest));
    CheckAllocation(GraphWhere(graph_), planned_peak_bytes_,
                    fmt::format("the planned peak (parameters {} + node outputs {}{})", FormatBytes(param_bytes_),
                                FormatBytes(buffers), culprit));
    planned_ = true;
  }
  if (options_.device != nullptr) PlanPlacement();
}

std::map<std::string, Tensor> Executor::Run(const std::map<std::string, Tensor>& inputs) {
  const std::string where = GraphWhere(graph_);
  std::map<std::string, Shape> shapes;
  for (const ir::ValueSpec& spec : graph_.inputs) {
    const auto it = inputs.find(spec.name);
    if (it == inputs.end()) throw Error(ErrorCode::InvalidArgument, where, fmt::format("missing input '{}'", spec.name));
    if (it->second.dtype() != spec.dtype) {
      throw Error(ErrorCode::UnsupportedDType, where,
                  fmt::format("input '{}' must be {}, got {}", spec.name, DTypeName(spec.dtype),
                              DTypeName(it->second.dtype())));
    }
    shapes[spec.name] = it->second.shape();
  }
  for (const auto& [name, t] : inputs) {
    bool known = false;
    for (const ir::ValueSpec& spec : graph_.inputs) known = known || spec.name == name;
    if (!known) throw Error(ErrorCode::InvalidArgument, where, fmt::format("unknown input '{}'", name));
  }
  if (!planned_ || shapes != planned_shapes_) Plan(shapes);

  std::map<std::string, Tensor> values = inputs;
  for (const auto& [name, t] : params_.tensors) values[name] = t;
  if (options_.device != nullptr) return RunPlaced(std::move(values));
  std::vector<Tensor>& pool = pool_;
  int64_t allocations = 0;
  auto allocate = [&](const TensorType& type) {
    const size_t bytes = DTypeStorageBytes(type.dtype, NumElements(type.shape));
    for (size_t k = 0; k < pool.size(); ++k) {
      if (pool[k].nbytes() == bytes && pool[k].StorageUseCount() == 1) {
        Tensor t = Tensor::WithStorageOf(pool[k], type.dtype, type.shape);
        pool.erase(pool.begin() + static_cast<std::ptrdiff_t>(k));
        std::memset(t.data(), 0, bytes);
        return t;
      }
    }
    ++allocations;
    return Tensor(type.dtype, type.shape);
  };

  const OpRegistry& registry = Registry();
  for (size_t step = 0; step < verified_.order.size(); ++step) {
    const size_t i = verified_.order[step];
    const ir::Node& node = graph_.nodes[i];
    const catalog::OpInfo* op = catalog::ResolveOp(node.op);
    const OpImpl* impl = registry.Find(node.op);
    std::vector<Tensor> in;
    in.reserve(node.inputs.size());
    for (const std::string& name : node.inputs) in.push_back(name.empty() ? Tensor() : values.at(name));
    std::vector<Tensor> out;
    try {
      for (const std::string& name : node.outputs) out.push_back(allocate(verified_.types.at(name)));
    } catch (const Error& e) {  // e.g. an output too large to allocate
      throw Error(e.code(), fmt::format("{} node '{}'", op->id, node.name), e.what());
    }
    Attrs attrs(*op, node.attrs, node.name, static_cast<int>(node.outputs.size()));
    attrs.set_param_types(&param_types_);
    OpContext ctx{backend_, attrs, node_state_[i], params_, node.inputs};
    RunLowering(*impl, ctx, in, out);
    for (size_t o = 0; o < node.outputs.size(); ++o) values[node.outputs[o]] = std::move(out[o]);
    for (const std::string& dead : release_after_[step]) {
      auto it = values.find(dead);
      if (it == values.end()) continue;
      pool.push_back(std::move(it->second));
      values.erase(it);
    }
  }
  planned_buffers_ = allocations;
  std::map<std::string, Tensor> result;
  for (const std::string& name : graph_.outputs) result[name] = values.at(name);
  // What is left (graph outputs, whose storage the caller now shares, and values nobody read)
  // goes to the pool for the next run; inputs and parameters are not ours to reuse.
  for (auto& [name, t] : values) {
    if (!t.defined() || inputs.contains(name) || params_.tensors.contains(name)) continue;
    pool.push_back(std::move(t));
  }
  return result;
}

}  // namespace backplane::runtime
