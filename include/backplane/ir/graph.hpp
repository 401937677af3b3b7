// The graph IR: named inputs, parameters, nodes (catalog op, positional inputs, named outputs,
// typed attributes) and outputs. The JSON form is documented in docs/graph-format.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "backplane/dtype.hpp"
#include "backplane/tensor.hpp"

namespace backplane::ir {

inline constexpr int kGraphFormatVersion = 1;

using AttrValue =
    std::variant<int64_t, double, bool, std::string, std::vector<int64_t>, std::vector<double>>;
using AttrMap = std::map<std::string, AttrValue>;

// A dimension is a size or a symbol bound at run time from the inputs ("batch").
struct Dim {
  int64_t size = 0;    // valid when symbol is empty
  std::string symbol;  // non-empty for a symbolic dimension
  bool operator==(const Dim&) const = default;
};

struct ValueSpec {
  std::string name;
  DType dtype = DType::Float32;
  std::vector<Dim> shape;
};

struct ParamInit {
  std::string kind = "zeros";  // zeros, ones, constant, normal, uniform, xavier_uniform, file
  double value = 0.0;          // constant
  double mean = 0.0, std = 1.0;    // normal
  double low = -1.0, high = 1.0;   // uniform
  uint64_t seed = 0;               // normal, uniform, xavier_uniform (Philox, per element)
  std::string file;                // file: a .safetensors path, relative to the graph file
  std::string tensor;              // file: the tensor name in it (default: the parameter name)
};

struct ParamSpec {
  std::string name;
  DType dtype = DType::Float32;
  Shape shape;
  ParamInit init;
  bool trainable = true;
};

struct Node {
  std::string name;  // unique; defaults to the first output's name
  std::string op;    // catalog ID or alias
  std::vector<std::string> inputs;   // value names; "" for an omitted optional input
  std::vector<std::string> outputs;  // value names defined by this node
  AttrMap attrs;
};

struct Graph {
  int version = kGraphFormatVersion;
  std::string name;
  std::vector<ValueSpec> inputs;
  std::vector<ParamSpec> params;
  std::vector<Node> nodes;
  std::vector<std::string> outputs;
  std::string base_dir;  // directory of the file it was read from (for parameter files)
};

// Parses a graph; throws Error naming the JSON path of the first problem (unknown version or
// field, duplicate names, wrong attribute types, unknown op).
Graph ParseGraph(const std::string& json_text, const std::string& origin = "<graph>");
Graph ReadGraphFile(const std::string& path);
std::string WriteGraph(const Graph& graph);  // canonical JSON

std::string AttrToString(const AttrValue& value);

}  // namespace backplane::ir
