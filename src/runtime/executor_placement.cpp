// Running a graph placed on a GraphDevice: segments of supported nodes run as device programs,
// the other nodes on the CPU backend; tensors cross only at the cuts and at the graph's edges.
#include <fmt/format.h>

#include <set>

#include "backplane/catalog/catalog.hpp"
#include "backplane/error.hpp"
#include "backplane/runtime/executor.hpp"

namespace backplane::runtime {

bool UpdatesParamInPlace(std::string_view op_id) {
  const catalog::OpInfo* op = catalog::ResolveOp(op_id);
  return op != nullptr && op->id.starts_with("train.optimizer.");
}

void Executor::PlanPlacement() {
  GraphDevice& device = *options_.device;
  segments_.clear();
  step_segment_.assign(verified_.order.size(), -1);
  step_fallback_.assign(verified_.order.size(), "");
  const std::string where = fmt::format("graph{}", graph_.name.empty() ? "" : " '" + graph_.name + "'");
  for (size_t step = 0; step < verified_.order.size(); ++step) {
    const ir::Node& node = graph_.nodes[verified_.order[step]];
    const catalog::OpInfo* op = catalog::ResolveOp(node.op);
    auto attrs = std::make_unique<Attrs>(*op, node.attrs, node.name, static_cast<int>(node.outputs.size()));
    attrs->set_param_types(&param_types_);
    SegmentNode sn;
    sn.node = &node;
    sn.attrs = attrs.get();
    for (const std::string& name : node.inputs) {
      sn.input_types.push_back(name.empty() ? TensorType{} : verified_.types.at(name));
      const auto frozen = params_.frozen.find(name);
      sn.input_frozen.push_back(frozen != params_.frozen.end() && frozen->second);
    }
    for (const std::string& name : node.outputs) sn.output_types.push_back(verified_.types.at(name));
    if (const std::optional<std::string> reason = device.Unsupported(sn)) {
      step_fallback_[step] = *reason;
      continue;
    }
    if (step == 0 || step_segment_[step - 1] < 0) {
      segments_.emplace_back();
      segments_.back().segment.where = where;
    }
    PlacedSegment& seg = segments_.back();
    step_segment_[step] = static_cast<int>(segments_.size()) - 1;
    seg.steps.push_back(step);
    seg.segment.nodes.push_back(std::move(sn));
    seg.attrs.push_back(std::move(attrs));
  }
  // Inputs: values read but not produced inside; outputs: values read after the segment, graph
  // outputs, and the new values of parameters an optimizer updates.
  const std::set<std::string> graph_outputs(graph_.outputs.begin(), graph_.outputs.end());
  for (PlacedSegment& seg : segments_) {
    std::set<std::string> produced, inputs;
    for (const SegmentNode& n : seg.segment.nodes) {
      for (const std::string& name : n.node->inputs) {
        if (name.empty() || produced.contains(name) || inputs.contains(name)) continue;
        inputs.insert(name);
        seg.segment.inputs.push_back(name);
        seg.segment.input_types.push_back(verified_.types.at(name));
      }
      for (const std::string& name : n.node->outputs) produced.insert(name);
    }
    std::set<std::string> needed;
    for (size_t step = seg.steps.back() + 1; step < verified_.order.size(); ++step) {
      for (const std::string& name : graph_.nodes[verified_.order[step]].inputs) needed.insert(name);
    }
    for (const SegmentNode& n : seg.segment.nodes) {
      const bool updates = UpdatesParamInPlace(n.node->op) && params_.tensors.contains(n.node->inputs[0]);
      for (size_t o = 0; o < n.node->outputs.size(); ++o) {
        const std::string& name = n.node->outputs[o];
        if (needed.contains(name) || graph_outputs.contains(name) || (updates && o == 0)) {
          seg.segment.outputs.push_back(name);
        }
      }
    }
  }
}

std::vector<NodePlacement> Executor::Placement(const std::map<std::string, Shape>& input_shapes) {
  if (!planned_ || input_shapes != planned_shapes_) Plan(input_shapes);
  std::vector<NodePlacement> out;
  for (size_t step = 0; step < verified_.order.size(); ++step) {
    const ir::Node& node = graph_.nodes[verified_.order[step]];
    NodePlacement p{node.name, node.op, "cpu", "", -1};
    if (options_.device != nullptr) {
      p.segment = step_segment_[step];
      if (p.segment >= 0) p.device = DeviceName(options_.device->device());
      p.fallback = step_fallback_[step];
    }
    out.push_back(std::move(p));
  }
  return out;
}

void Executor::BringParamHome(const std::string& name) {
  const auto it = params_.tensors.find(name);
  if (it != params_.tensors.end() && !it->second.on_host()) it->second = it->second.ToHost();
}

std::map<std::string, Tensor> Executor::RunPlaced(std::map<std::string, Tensor> values) {
  GraphDevice& device = *options_.device;
  const OpRegistry& registry = Registry();
  for (size_t step = 0; step < verified_.order.size(); ++step) {
    const int s = step_segment_[step];
    if (s >= 0) {
      PlacedSegment& seg = segments_[static_cast<size_t>(s)];
      if (step == seg.steps.front()) {
        // model.freeze may have changed the frozen flags since planning: the program changes with them.
        for (SegmentNode& n : seg.segment.nodes) {
          for (size_t i = 0; i < n.node->inputs.size(); ++i) {
            const auto f = params_.frozen.find(n.node->inputs[i]);
            const bool frozen = f != params_.frozen.end() && f->second;
            if (n.input_frozen[i] != frozen) {
              n.input_frozen[i] = frozen;
              seg.program.reset();
            }
          }
        }
        if (!seg.program) seg.program = device.Compile(seg.segment);
        std::vector<Tensor> in;
        for (const std::string& name : seg.segment.inputs) {
          Tensor& t = values.at(name);
          if (t.on_host()) {
            t = device.ToDevice(t);
            // A parameter stays resident on the device from its first upload.
            if (const auto p = params_.tensors.find(name); p != params_.tensors.end()) p->second = t;
          }
          in.push_back(t);
        }
        std::vector<Tensor> out = seg.program->Run(in, device_state_);
        for (size_t o = 0; o < out.size(); ++o) values[seg.segment.outputs[o]] = std::move(out[o]);
        for (const SegmentNode& n : seg.segment.nodes) {
          const std::string& param = n.node->inputs[0];
          if (UpdatesParamInPlace(n.node->op) && params_.tensors.contains(param)) {
            params_.tensors[param] = values.at(n.node->outputs[0]);
          }
        }
      }
    } else {
      const size_t i = verified_.order[step];
      const ir::Node& node = graph_.nodes[i];
      const catalog::OpInfo* op = catalog::ResolveOp(node.op);
      const OpImpl* impl = registry.Find(node.op);
      std::vector<Tensor> in;
      for (const std::string& name : node.inputs) {
        if (name.empty()) {
          in.emplace_back();
          continue;
        }
        Tensor& t = values.at(name);
        if (!t.on_host()) {
          if (params_.tensors.contains(name)) {
            BringParamHome(name);
            t = params_.tensors.at(name);
          } else {
            t = t.ToHost();
          }
        }
        in.push_back(t);
      }
      std::vector<Tensor> out;
      try {
        for (const std::string& name : node.outputs) {
          const TensorType& type = verified_.types.at(name);
          out.emplace_back(type.dtype, type.shape);
        }
      } catch (const Error& e) {  // e.g. an output too large to allocate
        throw Error(e.code(), fmt::format("{} node '{}'", op->id, node.name), e.what());
      }
      Attrs attrs(*op, node.attrs, node.name, static_cast<int>(node.outputs.size()));
      attrs.set_param_types(&param_types_);
      OpContext ctx{backend_, attrs, node_state_[i], params_, node.inputs};
      RunLowering(*impl, ctx, in, out);
      for (size_t o = 0; o < node.outputs.size(); ++o) values[node.outputs[o]] = std::move(out[o]);
    }
    for (const std::string& dead : release_after_[step]) values.erase(dead);
  }
  std::map<std::string, Tensor> result;
  for (const std::string& name : graph_.outputs) result[name] = values.at(name).ToHost();
  return result;
}

}  // namespace backplane::runtime
