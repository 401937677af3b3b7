// backplane.Graph (the IR: load, build, verify, save) and backplane.Executor (run, parameters).
#include <fmt/format.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>

#include "backplane/atomic_file.hpp"
#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/error.hpp"
#include "backplane/io.hpp"
#include "backplane/runtime/executor.hpp"
#include "bindings.hpp"
#include "devices.hpp"

namespace backplane::python {
namespace {

DType ParseDType(const std::string& name, const std::string& where) {
  const std::optional<DType> d = DTypeFromName(name);
  if (!d) ThrowInvalidArgument(where, "dtype", "a Backplane dtype name such as 'f32'", "'" + name + "'");
  return *d;
}

std::vector<ir::Dim> ParseDims(nb::handle shape, const std::string& where) {
  std::vector<ir::Dim> dims;
  for (nb::handle d : shape) {
    if (PyUnicode_Check(d.ptr())) {
      dims.push_back({0, nb::cast<std::string>(d)});
    } else {
      dims.push_back({nb::cast<int64_t>(d), ""});
    }
  }
  (void)where;
  return dims;
}

nb::list DimsToPython(const std::vector<ir::Dim>& dims) {
  nb::list out;
  for (const ir::Dim& d : dims) {
    if (d.symbol.empty()) {
      out.append(d.size);
    } else {
      out.append(d.symbol);
    }
  }
  return out;
}

std::map<std::string, Tensor> ToTensors(nb::dict values) {
  std::map<std::string, Tensor> out;
  for (auto [key, value] : values) out[nb::cast<std::string>(key)] = ToTensor(value);
  return out;
}

// Owns the backend and device an Executor refers to.
struct PyExecutor {
  std::unique_ptr<Backend> backend = cpu::CreateBackend();
  runtime::GraphDevice* device = nullptr;
  std::unique_ptr<runtime::Executor> executor;
};

}  // namespace

void BindGraph(nb::module_& m) {
  nb::class_<ir::Graph>(m, "Graph", "A Backplane graph: inputs, parameters, nodes and outputs (docs/graph-format.md).")
      .def(nb::init<>())
      .def("__init__", [](ir::Graph* g, const std::string& name) { new (g) ir::Graph(); g->name = name; }, nb::arg("name"))
      .def_static("load", &ir::ReadGraphFile, nb::arg("path"), "Reads a graph JSON file.")
      .def_static("from_json", [](const std::string& text) { return ir::ParseGraph(text, "<python>"); }, nb::arg("text"))
      .def("to_json", &ir::WriteGraph)
      .def("save", [](const ir::Graph& g, const std::string& path) {
        const std::string text = ir::WriteGraph(g);
        io::WriteFileAtomically(path, {text});  // temp file + rename: never half a graph
      }, nb::arg("path"))
      .def_rw("name", &ir::Graph::name)
      .def_rw("outputs", &ir::Graph::outputs)
      .def_rw("base_dir", &ir::Graph::base_dir, "Folder that parameter files are relative to.")
      .def_prop_ro("inputs", [](const ir::Graph& g) {
        nb::list out;
        for (const ir::ValueSpec& v : g.inputs) {
          out.append(nb::make_tuple(v.name, std::string(DTypeName(v.dtype)), DimsToPython(v.shape)));
        }
        return out;
      }, "(name, dtype, shape) per input; symbolic dimensions are strings.")
      .def_prop_ro("params", [](const ir::Graph& g) {
        nb::list out;
        for (const ir::ParamSpec& p : g.params) {
          out.append(nb::make_tuple(p.name, std::string(DTypeName(p.dtype)), p.shape, p.init.kind, p.trainable));
        }
        return out;
      }, "(name, dtype, shape, init kind, trainable) per parameter.")
      .def_prop_ro("nodes", [](const ir::Graph& g) {
        nb::list out;
        for (const ir::Node& n : g.nodes) {
          nb::dict attrs;
          for (const auto& [k, v] : n.attrs) attrs[k.c_str()] = FromAttr(v);
          nb::dict d;
          d["name"] = n.name;
          d["op"] = n.op;
          d["inputs"] = n.inputs;
          d["outputs"] = n.outputs;
          d["attrs"] = attrs;
          out.append(d);
        }
        return out;
      })
      .def("add_input", [](ir::Graph& g, const std::string& name, const std::string& dtype, nb::handle shape) {
        g.inputs.push_back({name, ParseDType(dtype, "backplane.Graph.add_input"), ParseDims(shape, "add_input")});
        return name;
      }, nb::arg("name"), nb::arg("dtype"), nb::arg("shape"), "Adds an input; dimensions are sizes or symbol names.")
      .def("add_param",
           [](ir::Graph& g, const std::string& name, const std::string& dtype, const std::vector<int64_t>& shape,
              const std::string& init, double value, double mean, double std, double low, double high, uint64_t seed,
              const std::string& file, const std::string& tensor, bool trainable) {
             ir::ParamSpec p;
             p.name = name;
             p.dtype = ParseDType(dtype, "backplane.Graph.add_param");
             p.shape = shape;
             p.init.kind = init;
             p.init.value = value;
             p.init.mean = mean;
             p.init.std = std;
             p.init.low = low;
             p.init.high = high;
             p.init.seed = seed;
             p.init.file = file;
             p.init.tensor = tensor;
             p.trainable = trainable;
             g.params.push_back(p);
             return name;
           },
           nb::arg("name"), nb::arg("dtype"), nb::arg("shape"), nb::arg("init") = "zeros", nb::arg("value") = 0.0,
           nb::arg("mean") = 0.0, nb::arg("std") = 1.0, nb::arg("low") = -1.0, nb::arg("high") = 1.0,
           nb::arg("seed") = 0, nb::arg("file") = "", nb::arg("tensor") = "", nb::arg("trainable") = true,
           "Adds a parameter (init: zeros, ones, constant, normal, uniform, xavier_uniform, file).")
      .def("add_node",
           [](ir::Graph& g, const std::string& op_id, const std::vector<std::string>& inputs,
              const std::vector<std::string>& outputs, const std::string& name, nb::dict attrs) {
             const catalog::OpInfo* op = catalog::ResolveOp(op_id);
             if (op == nullptr) ThrowInvalidArgument("backplane.Graph.add_node", "op", "a catalog operation ID", "'" + op_id + "'");
             ir::Node n;
             n.op = op_id;
             n.inputs = inputs;
             n.outputs = outputs;
             if (n.outputs.empty()) n.outputs.push_back(fmt::format("{}_{}", name.empty() ? "v" : name, g.nodes.size()));
             n.name = name.empty() ? n.outputs.front() : name;
             n.attrs = ToAttrs(*op, attrs);
             g.nodes.push_back(n);
             return n.outputs;
           },
           nb::arg("op"), nb::arg("inputs"), nb::arg("outputs") = std::vector<std::string>{}, nb::arg("name") = "",
           nb::arg("attrs") = nb::dict(), "Appends a node; returns its output names.")
      .def("verify",
           [](const ir::Graph& g, const std::map<std::string, std::vector<int64_t>>& input_shapes) {
             std::map<std::string, Shape> shapes(input_shapes.begin(), input_shapes.end());
             const runtime::VerifiedGraph v = runtime::VerifyGraph(g, shapes);
             nb::dict types;
             for (const auto& [name, t] : v.types) types[name.c_str()] = nb::make_tuple(std::string(DTypeName(t.dtype)), t.shape);
             return types;
           },
           nb::arg("input_shapes") = std::map<std::string, std::vector<int64_t>>{},
           "Checks the graph; returns {value: (dtype, shape)}; raises naming the node otherwise.")
      .def("__repr__", [](const ir::Graph& g) {
        return fmt::format("backplane.Graph('{}', {} inputs, {} params, {} nodes, {} outputs)", g.name, g.inputs.size(),
                           g.params.size(), g.nodes.size(), g.outputs.size());
      });

  nb::class_<PyExecutor>(m, "Executor", "Runs a graph; parameters and node state persist across runs.")
      .def("__init__",
           [](PyExecutor* self, const ir::Graph& graph, const std::string& device, bool check_finite_params) {
             new (self) PyExecutor();
             self->device = SharedDevice(device);
             self->executor = std::make_unique<runtime::Executor>(
                 graph, *self->backend,
                 runtime::ExecutorOptions{.check_finite_params = check_finite_params, .device = self->device});
           },
           nb::arg("graph"), nb::arg("device") = "cpu", nb::arg("check_finite_params") = false)
      .def("run",
           [](PyExecutor& self, nb::dict inputs) {
             std::map<std::string, Tensor> in = ToTensors(inputs);
             std::map<std::string, Tensor> out;
             {
               nb::gil_scoped_release release;
               out = self.executor->Run(in);
               in.clear();
               for (auto& [name, t] : out) t = t.ToHost();
             }
             return out;
           },
           nb::arg("inputs"), "Runs once; returns {output name: Tensor}.")
      .def("load_params", [](PyExecutor& self, nb::dict params) {
        std::map<std::string, Tensor> tensors;
        // Copies: the optimizer updates parameters in place, never a caller's array.
        for (auto& [name, t] : ToTensors(params)) tensors[name] = t.Clone();
        self.executor->LoadParams(tensors);
      }, nb::arg("params"), "Replaces parameters by name (copied; dtype and shape must match).")
      .def("load_state", [](PyExecutor& self, nb::dict state) {
        std::map<std::string, Tensor> tensors;
        for (auto& [name, t] : ToTensors(state)) tensors[name] = t.Clone();
        self.executor->LoadState(tensors);
      }, nb::arg("state"), "Loads node state saved by save_params ('<node>/<key>' entries).")
      .def("save_params", [](PyExecutor& self) {
        std::map<std::string, Tensor> out;
        for (const auto& [name, t] : self.executor->SaveParams()) out[name] = t.ToHost().Clone();
        return out;
      }, "Parameters by name plus node state as '<node>/<key>' (copies).")
      .def("load_params_file", [](PyExecutor& self, const std::string& path) {
        const auto tensors = io::ReadSafetensors(path);
        std::map<std::string, Tensor> params;
        for (const auto& [name, t] : tensors) {
          if (name.find('/') == std::string::npos) params[name] = t;
        }
        self.executor->LoadParams(params);
        self.executor->LoadState(tensors);
      }, nb::arg("path"), "Loads parameters and node state from a .safetensors file.")
      .def("save_params_file", [](PyExecutor& self, const std::string& path) {
        std::map<std::string, Tensor> host;
        for (const auto& [name, t] : self.executor->SaveParams()) host[name] = t.ToHost();
        io::WriteSafetensors(path, host);
      }, nb::arg("path"), "Writes parameters and node state to a .safetensors file.")
      .def("placement", [](PyExecutor& self, const std::map<std::string, std::vector<int64_t>>& shapes) {
        std::map<std::string, Shape> s(shapes.begin(), shapes.end());
        nb::list out;
        for (const runtime::NodePlacement& p : self.executor->Placement(s)) {
          nb::dict d;
          d["node"] = p.node;
          d["op"] = p.op;
          d["device"] = p.device;
          d["fallback"] = p.fallback;
          d["segment"] = p.segment;
          out.append(d);
        }
        return out;
      }, nb::arg("input_shapes"), "Where each node runs for these input shapes.")
      .def_prop_ro("graph", [](PyExecutor& self) { return self.executor->graph(); });

  m.def("read_safetensors", &io::ReadSafetensors, nb::arg("path"));
  m.def("write_safetensors", [](const std::string& path, nb::dict tensors) { io::WriteSafetensors(path, ToTensors(tensors)); },
        nb::arg("path"), nb::arg("tensors"));
}

}  // namespace backplane::python
