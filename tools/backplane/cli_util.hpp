// Small helpers shared by the subcommands.
#pragma once

#include <string>
#include <utility>

#include "backplane/catalog/catalog.hpp"
#include "backplane/ir/graph.hpp"
#include "backplane/runtime/executor.hpp"
#include "backplane/tensor.hpp"

namespace backplane::cli {

// "NAME=FILE" -> {NAME, FILE}; throws InvalidArgument naming the option otherwise.
std::pair<std::string, std::string> SplitAssignment(const std::string& option, const std::string& text);
// Parses a command-line attribute value by the catalog's type ("1,2" or "[1,2]" for lists).
ir::AttrValue ParseAttrText(const catalog::AttrSpec& spec, const std::string& text);
// "f32[2, 3] = [0.1, 0.2, ...]" (values shown for up to `max_values` elements).
std::string Summarize(const Tensor& t, int max_values = 8);

// The --device option's graph device; nullptr for "cpu".
std::unique_ptr<runtime::GraphDevice> OpenDeviceOption(const std::string& name);
// One line per node: "  node (op): xla:0" or "  node (op): cpu, fallback: reason", then counts.
std::string ExplainPlacement(const std::vector<runtime::NodePlacement>& placement);

}  // namespace backplane::cli
