// Graph passes: dead-code elimination and table-driven fusion.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "backplane/ir/graph.hpp"
#include "backplane/tolerance.hpp"

namespace backplane::ir {

// One entry of the fusion table: a pattern of unfused ops, the Fused kernel that replaces it, the
// dtypes it applies to, and the parity bound against the unfused graph (checked by a test that
// runs every entry both ways).
struct FusionRule {
  std::string name;     // e.g. "matmul_bias_gelu"
  std::string pattern;  // the Fused node's "pattern" attribute
  std::string activation;
  std::vector<std::string> ops;  // the unfused ops, in data-flow order
  std::vector<DType> dtypes;
  Tolerance parity;  // |fused - unfused| <= abs + rel |unfused|
};

std::span<const FusionRule> FusionTable();

struct PassReport {
  std::vector<std::string> removed;  // node names
  std::vector<std::string> fused;    // "rule: node, node -> fused node"
};

// Removes nodes none of whose outputs reach a graph output, keeping nodes with effects
// (optimizer steps, metrics, model editing).
PassReport EliminateDeadCode(Graph& graph);

// Rewrites every match of a FusionTable rule into one Fused node. A match needs each
// intermediate value to have a single reader and not to be a graph output.
PassReport FuseOps(Graph& graph);

}  // namespace backplane::ir
