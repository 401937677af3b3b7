#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "backplane/catalog/catalog.hpp"
#include "backplane/error.hpp"
#include "backplane/ir/graph.hpp"
#include "backplane/memory_limit.hpp"

namespace backplane::ir {
namespace {

using nlohmann::json;

class Reader {
 public:
  explicit Reader(std::string origin) : origin_(std::move(origin)) {}

  [[noreturn]] void Fail(const std::string& path, const std::string& detail) const {
    throw Error(ErrorCode::InvalidArgument, origin_, fmt::format("{}: {}", path, detail));
  }

  // A fixed shape's element count fits int64 and its bit count fits 64 bits (the allocation ceiling
  // is checked when the executor allocates).
  void CheckStorageFits(DType dtype, const Shape& shape, const std::string& path) const {
    int64_t n = 1;
    bool empty = false;
    for (int64_t d : shape) empty = empty || d == 0;
    if (empty) return;
    for (int64_t d : shape) {
      if (__builtin_mul_overflow(n, d, &n)) Fail(path, fmt::format("{} has more than 2^63 - 1 elements", ShapeToString(shape)));
    }
    const uint64_t bits = static_cast<uint64_t>(DTypeBits(dtype));
    if (bits != 0 && static_cast<uint64_t>(n) > (UINT64_MAX - 7) / bits) {
      Fail(path, fmt::format("the byte count of {} {} overflows 64 bits", DTypeName(dtype), ShapeToString(shape)));
    }
  }

  void OnlyKeys(const json& object, const std::string& path,
                std::initializer_list<const char*> allowed) const {
    if (!object.is_object()) Fail(path, fmt::format("must be an object, got {}", object.type_name()));
    for (const auto& [key, value] : object.items()) {
      bool known = false;
      for (const char* a : allowed) known = known || key == a;
      if (!known) Fail(path + "." + key, "unknown field");
    }
  }

  const json& Required(const json& object, const std::string& path, const char* key) const {
    if (!object.contains(key)) Fail(path, fmt::format("missing field '{}'", key));
    return object.at(key);
  }

  std::string String(const json& v, const std::string& path) const {
    if (!v.is_string()) Fail(path, fmt::format("must be a string, got {}", v.dump()));
    return v.get<std::string>();
  }

  int64_t Integer(const json& v, const std::string& path) const {
    if (v.is_number_integer()) return v.get<int64_t>();
    if (v.is_number_float()) {
      const double d = v.get<double>();
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15) return static_cast<int64_t>(d);
    }
    Fail(path, fmt::format("must be an integer, got {}", v.dump()));
  }

  double Number(const json& v, const std::string& path) const {
    if (v.is_number()) return v.get<double>();
    // JSON has no NaN/Inf literals; accept them as strings for attributes and initialisers.
    if (v.is_string()) {
      const std::string s = v.get<std::string>();
      if (s == "nan" || s == "NaN") return std::nan("");
      if (s == "inf" || s == "Infinity") return INFINITY;
      if (s == "-inf" || s == "-Infinity") return -INFINITY;
    }
    Fail(path, fmt::format("must be a number, got {}", v.dump()));
  }

  DType ParseDType(const json& v, const std::string& path) const {
    const std::string name = String(v, path);
    const auto d = DTypeFromName(name);
    if (!d) Fail(path, fmt::format("unknown dtype '{}'", name));
    return *d;
  }

  AttrValue ParseAttr(const catalog::AttrSpec& spec, const json& v, const std::string& path) const {
    switch (spec.type) {
      case catalog::AttrType::Int: return Integer(v, path);
      case catalog::AttrType::Float: return Number(v, path);
      case catalog::AttrType::Bool:
        if (!v.is_boolean()) Fail(path, fmt::format("must be true or false, got {}", v.dump()));
        return v.get<bool>();
      case catalog::AttrType::String: return String(v, path);
      case catalog::AttrType::IntList: {
        if (!v.is_array()) Fail(path, fmt::format("must be a list of integers, got {}", v.dump()));
        std::vector<int64_t> out;
        for (size_t i = 0; i < v.size(); ++i) out.push_back(Integer(v[i], fmt::format("{}[{}]", path, i)));
        return out;
      }
      case catalog::AttrType::FloatList: {
        if (!v.is_array()) Fail(path, fmt::format("must be a list of numbers, got {}", v.dump()));
        std::vector<double> out;
        for (size_t i = 0; i < v.size(); ++i) out.push_back(Number(v[i], fmt::format("{}[{}]", path, i)));
        return out;
      }
    }
    Fail(path, "has an unknown attribute type");
  }

  std::vector<std::string> NameList(const json& v, const std::string& path, bool allow_empty_names) const {
    if (!v.is_array()) Fail(path, fmt::format("must be a list of names, got {}", v.dump()));
    std::vector<std::string> out;
    for (size_t i = 0; i < v.size(); ++i) {
      std::string s = String(v[i], fmt::format("{}[{}]", path, i));
      if (s.empty() && !allow_empty_names) Fail(fmt::format("{}[{}]", path, i), "must not be empty");
      out.push_back(std::move(s));
    }
    return out;
  }

  Graph Parse(const json& root) const {
    OnlyKeys(root, "$", {"format", "version", "name", "doc", "inputs", "params", "nodes", "outputs"});
    Graph g;
    const std::string format = String(Required(root, "$", "format"), "$.format");
    if (format != "backplane.graph") Fail("$.format", fmt::format("must be \"backplane.graph\", got \"{}\"", format));
    g.version = static_cast<int>(Integer(Required(root, "$", "version"), "$.version"));
    if (g.version != kGraphFormatVersion) {
      Fail("$.version", fmt::format("unsupported version {} (this build reads version {})", g.version,
                                    kGraphFormatVersion));
    }
    if (root.contains("name")) g.name = String(root["name"], "$.name");
    std::set<std::string> values;
    auto define = [&](const std::string& name, const std::string& path) {
      if (!values.insert(name).second) Fail(path, fmt::format("duplicate name '{}'", name));
    };
    if (root.contains("inputs")) {
      const json& inputs = root["inputs"];
      if (!inputs.is_array()) Fail("$.inputs", "must be a list");
      for (size_t i = 0; i < inputs.size(); ++i) {
        const std::string path = fmt::format("$.inputs[{}]", i);
        OnlyKeys(inputs[i], path, {"name", "dtype", "shape", "doc"});
        ValueSpec spec;
        spec.name = String(Required(inputs[i], path, "name"), path + ".name");
        define(spec.name, path + ".name");
        spec.dtype = ParseDType(Required(inputs[i], path, "dtype"), path + ".dtype");
        const json& shape = Required(inputs[i], path, "shape");
        if (!shape.is_array()) Fail(path + ".shape", "must be a list");
        for (size_t d = 0; d < shape.size(); ++d) {
          const std::string dpath = fmt::format("{}.shape[{}]", path, d);
          Dim dim;
          if (shape[d].is_string()) {
            dim.symbol = shape[d].get<std::string>();
            if (dim.symbol.empty()) Fail(dpath, "a symbolic dimension needs a name");
          } else {
            dim.size = Integer(shape[d], dpath);
            if (dim.size < 0) Fail(dpath, fmt::format("must be >= 0, got {}", dim.size));
          }
          spec.shape.push_back(dim);
        }
        g.inputs.push_back(std::move(spec));
      }
    }
    if (root.contains("params")) {
      const json& params = root["params"];
      if (!params.is_array()) Fail("$.params", "must be a list");
      for (size_t i = 0; i < params.size(); ++i) {
        const std::string path = fmt::format("$.params[{}]", i);
        OnlyKeys(params[i], path, {"name", "dtype", "shape", "init", "trainable", "doc"});
        ParamSpec p;
        p.name = String(Required(params[i], path, "name"), path + ".name");
        define(p.name, path + ".name");
        p.dtype = ParseDType(Required(params[i], path, "dtype"), path + ".dtype");
        const json& shape = Required(params[i], path, "shape");
        if (!shape.is_array()) Fail(path + ".shape", "must be a list");
        for (size_t d = 0; d < shape.size(); ++d) {
          const int64_t size = Integer(shape[d], fmt::format("{}.shape[{}]", path, d));
          if (size < 0) Fail(fmt::format("{}.shape[{}]", path, d), "must be >= 0");
          p.shape.push_back(size);
        }
        CheckStorageFits(p.dtype, p.shape, path + ".shape");
        if (params[i].contains("trainable")) {
          if (!params[i]["trainable"].is_boolean()) Fail(path + ".trainable", "must be true or false");
          p.trainable = params[i]["trainable"].get<bool>();
        }
        if (params[i].contains("init")) p.init = ParseInit(params[i]["init"], path + ".init", p.name);
        g.params.push_back(std::move(p));
      }
    }
    const json& nodes = Required(root, "$", "nodes");
    if (!nodes.is_array()) Fail("$.nodes", "must be a list");
    std::set<std::string> node_names;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const std::string path = fmt::format("$.nodes[{}]", i);
      OnlyKeys(nodes[i], path, {"name", "op", "inputs", "outputs", "attrs", "doc"});
      Node n;
      n.op = String(Required(nodes[i], path, "op"), path + ".op");
      const catalog::OpInfo* op = catalog::ResolveOp(n.op);
      if (op == nullptr) Fail(path + ".op", fmt::format("unknown operation '{}'", n.op));
      n.inputs = nodes[i].contains("inputs") ? NameList(nodes[i]["inputs"], path + ".inputs", true)
                                             : std::vector<std::string>{};
      n.outputs = NameList(Required(nodes[i], path, "outputs"), path + ".outputs", false);
      if (n.outputs.empty()) Fail(path + ".outputs", "a node needs at least one output");
      for (size_t o = 0; o < n.outputs.size(); ++o) define(n.outputs[o], fmt::format("{}.outputs[{}]", path, o));
      n.name = nodes[i].contains("name") ? String(nodes[i]["name"], path + ".name") : n.outputs[0];
      if (!node_names.insert(n.name).second) Fail(path + ".name", fmt::format("duplicate node name '{}'", n.name));
      if (nodes[i].contains("attrs")) {
        const json& attrs = nodes[i]["attrs"];
        if (!attrs.is_object()) Fail(path + ".attrs", "must be an object");
        for (const auto& [key, value] : attrs.items()) {
          const std::string apath = path + ".attrs." + key;
          const catalog::AttrSpec* spec = nullptr;
          for (const catalog::AttrSpec& s : op->attrs) {
            if (s.name == key) spec = &s;
          }
          if (spec == nullptr) {
            std::string known;
            for (const catalog::AttrSpec& s : op->attrs) known += (known.empty() ? "" : ", ") + s.name;
            Fail(apath, fmt::format("unknown attribute of {} (known: {})", op->id,
                                    known.empty() ? "none" : known));
          }
          n.attrs[key] = ParseAttr(*spec, value, apath);
        }
      }
      g.nodes.push_back(std::move(n));
    }
    g.outputs = NameList(Required(root, "$", "outputs"), "$.outputs", false);
    return g;
  }

  ParamInit ParseInit(const json& v, const std::string& path, const std::string& param) const {
    OnlyKeys(v, path, {"kind", "value", "mean", "std", "low", "high", "seed", "file", "tensor"});
    ParamInit init;
    init.kind = String(Required(v, path, "kind"), path + ".kind");
    static const std::set<std::string> kinds = {"zeros", "ones", "constant", "normal",
                                                "uniform", "xavier_uniform", "file"};
    if (!kinds.contains(init.kind)) Fail(path + ".kind", fmt::format("unknown initialiser '{}'", init.kind));
    if (v.contains("value")) init.value = Number(v["value"], path + ".value");
    if (v.contains("mean")) init.mean = Number(v["mean"], path + ".mean");
    if (v.contains("std")) init.std = Number(v["std"], path + ".std");
    if (v.contains("low")) init.low = Number(v["low"], path + ".low");
    if (v.contains("high")) init.high = Number(v["high"], path + ".high");
    if (v.contains("seed")) init.seed = static_cast<uint64_t>(Integer(v["seed"], path + ".seed"));
    if (v.contains("file")) init.file = String(v["file"], path + ".file");
    init.tensor = v.contains("tensor") ? String(v["tensor"], path + ".tensor") : param;
    if (init.kind == "file" && init.file.empty()) Fail(path + ".file", "required for kind \"file\"");
    if (init.kind == "normal" && !(init.std >= 0)) Fail(path + ".std", "must be >= 0");
    if (init.kind == "uniform" && !(init.low <= init.high)) Fail(path, "needs low <= high");
    return init;
  }

 private:
  std::string origin_;
};

json AttrToJson(const AttrValue& v) {
  return std::visit([](const auto& x) { return json(x); }, v);
}

}  // namespace

// For messages: bytes that are not UTF-8 print as U+FFFD instead of throwing.
std::string AttrToString(const AttrValue& value) {
  return AttrToJson(value).dump(-1, ' ', false, json::error_handler_t::replace);
}

Graph ParseGraph(const std::string& json_text, const std::string& origin) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number that overflows
    throw Error(ErrorCode::InvalidArgument, origin, fmt::format("malformed JSON: {}", e.what()));
  }
  return Reader(origin).Parse(root);
}

Graph ReadGraphFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error(ErrorCode::InvalidArgument, path, "cannot open the graph file");
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (!ec) CheckAllocation(path, size, "reading the graph file");
  std::stringstream text;
  text << file.rdbuf();
  Graph g = ParseGraph(text.str(), path);
  g.base_dir = std::filesystem::path(path).parent_path().string();
  return g;
}

std::string WriteGraph(const Graph& graph) {
  json root;
  root["format"] = "backplane.graph";
  root["version"] = graph.version;
  if (!graph.name.empty()) root["name"] = graph.name;
  root["inputs"] = json::array();
  for (const ValueSpec& in : graph.inputs) {
    json shape = json::array();
    for (const Dim& d : in.shape) shape.push_back(d.symbol.empty() ? json(d.size) : json(d.symbol));
    root["inputs"].push_back({{"name", in.name}, {"dtype", DTypeName(in.dtype)}, {"shape", shape}});
  }
  root["params"] = json::array();
  for (const ParamSpec& p : graph.params) {
    json init = {{"kind", p.init.kind}};
    if (p.init.kind == "constant") init["value"] = p.init.value;
    if (p.init.kind == "normal") init.update({{"mean", p.init.mean}, {"std", p.init.std}, {"seed", p.init.seed}});
    if (p.init.kind == "uniform") init.update({{"low", p.init.low}, {"high", p.init.high}, {"seed", p.init.seed}});
    if (p.init.kind == "xavier_uniform") init["seed"] = p.init.seed;
    if (p.init.kind == "file") init.update({{"file", p.init.file}, {"tensor", p.init.tensor}});
    root["params"].push_back({{"name", p.name}, {"dtype", DTypeName(p.dtype)}, {"shape", p.shape},
                              {"init", init}, {"trainable", p.trainable}});
  }
  root["nodes"] = json::array();
  for (const Node& n : graph.nodes) {
    json node = {{"name", n.name}, {"op", n.op}, {"inputs", n.inputs}, {"outputs", n.outputs}};
    if (!n.attrs.empty()) {
      json attrs = json::object();
      for (const auto& [k, v] : n.attrs) attrs[k] = AttrToJson(v);
      node["attrs"] = attrs;
    }
    root["nodes"].push_back(node);
  }
  root["outputs"] = graph.outputs;
  try {
    return root.dump(2) + "\n";
  } catch (const json::type_error&) {
    throw Error(ErrorCode::InvalidArgument, "ir::WriteGraph",
                fmt::format("graph '{}': names and string attributes must be valid UTF-8", graph.name));
  }
}

}  // namespace backplane::ir
