#include "backplane/catalog/inventory.hpp"

#include <fmt/format.h>

#include <map>
#include <set>
#include <sstream>

namespace backplane::catalog {
namespace {

// Methods named by a direct/composite link, in the reference view or in Backplane's.
std::set<MethodId> LinkedMethods(bool reference_view) {
  std::set<MethodId> linked;
  for (const OpInfo& op : Ops()) {
    const LinkKind kind = reference_view ? op.reference_link : op.link;
    if (kind != LinkKind::Direct && kind != LinkKind::Composite) continue;
    for (MethodId id : reference_view ? op.reference_methods : op.methods) linked.insert(id);
  }
  return linked;
}

std::string MethodList(const std::vector<MethodId>& ids) {
  std::string out;
  for (MethodId id : ids) {
    if (!out.empty()) out += ", ";
    out += Method(id).QualifiedName();
  }
  return out;
}

struct Counts {
  int seed_surfaces = 0;
  int seed_methods = 0;
  int required = 0;
  std::map<LinkKind, int> links;
  std::vector<MethodId> seed_backend_only;
  std::vector<MethodId> without_op_id;
  int registry_only_required = 0;
};

Counts Count() {
  Counts c;
  for (const SurfaceInfo& s : Surfaces()) {
    if (!s.in_seed) continue;
    ++c.seed_surfaces;
    c.seed_methods += s.method_count;
  }
  for (const OpInfo& op : Ops()) {
    if (!op.required) continue;
    ++c.required;
    ++c.links[op.reference_link];
    if (op.link == LinkKind::KernelRegistry) ++c.registry_only_required;
  }
  const std::set<MethodId> ref_linked = LinkedMethods(true);
  const std::set<MethodId> bp_linked = LinkedMethods(false);
  std::set<std::string_view> seed_surfaces;
  for (const SurfaceInfo& s : Surfaces()) {
    if (s.in_seed) seed_surfaces.insert(s.name);
  }
  for (const MethodInfo& m : Methods()) {
    if (seed_surfaces.contains(m.surface) && !ref_linked.contains(m.id)) {
      c.seed_backend_only.push_back(m.id);
    }
    if (!bp_linked.contains(m.id)) c.without_op_id.push_back(m.id);
  }
  return c;
}

std::map<MethodId, std::vector<std::string>> OpsByMethod() {
  std::map<MethodId, std::vector<std::string>> by_method;
  for (const OpInfo& op : Ops()) {
    for (MethodId id : op.methods) by_method[id].push_back(op.id);
  }
  return by_method;
}

std::string AttrsText(const OpInfo& op) {
  std::string out;
  for (const AttrSpec& a : op.attrs) {
    if (!out.empty()) out += "; ";
    out += fmt::format("{}: {}", a.name, AttrTypeName(a.type));
    if (!a.required) out += fmt::format(" = {}", a.default_value.empty() ? "\"\"" : a.default_value);
  }
  return out.empty() ? "—" : out;
}

std::string Joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "—" : out;
}

}  // namespace

nlohmann::json InventoryJson(const std::vector<DeviceKernels>& devices) {
  using nlohmann::json;
  Counts c = Count();
  json j;
  j["seed"] = {
      {"surfaces", c.seed_surfaces},
      {"methods", c.seed_methods},
      {"required_ops", c.required},
      {"links",
       {{"direct", c.links[LinkKind::Direct]},
        {"composite", c.links[LinkKind::Composite]},
        {"kernel_registry", c.links[LinkKind::KernelRegistry]},
        {"graph_only", c.links[LinkKind::GraphOnly]}}},
      {"backend_only_methods", c.seed_backend_only.size()},
  };
  json implemented = json::object();
  json not_implemented = json::array();
  for (const DeviceKernels& d : devices) {
    int count = 0;
    for (const MethodInfo& m : Methods()) count += d.implements(m.id) ? 1 : 0;
    implemented[d.device] = count;
  }
  const DeviceKernels* cpu = nullptr;
  for (const DeviceKernels& d : devices) {
    if (d.device == "cpu") cpu = &d;
  }
  for (const MethodInfo& m : Methods()) {
    if (cpu == nullptr || !cpu->implements(m.id)) not_implemented.push_back(m.QualifiedName());
  }
  j["backplane"] = {
      {"surfaces", Surfaces().size()},
      {"methods", Methods().size()},
      {"ops", Ops().size()},
      {"implemented", implemented},
      {"not_implemented", not_implemented},
      {"registry_only_required_ops", c.registry_only_required},
      {"methods_without_op_id", c.without_op_id.size()},
  };

  const auto by_method = OpsByMethod();
  json surfaces = json::array();
  for (const SurfaceInfo& s : Surfaces()) {
    surfaces.push_back({{"name", s.name}, {"methods", s.method_count}, {"in_seed", s.in_seed}});
  }
  j["surfaces"] = surfaces;
  json methods = json::array();
  for (const MethodInfo& m : Methods()) {
    json dt = json::array();
    for (DType d : AllDTypes()) {
      if (m.dtypes.Contains(d)) dt.push_back(DTypeName(d));
    }
    json impl = json::object();
    for (const DeviceKernels& d : devices) impl[d.device] = d.implements(m.id);
    const auto it = by_method.find(m.id);
    methods.push_back({{"name", m.QualifiedName()},
                       {"surface", m.surface},
                       {"method", m.method},
                       {"family", m.family},
                       {"returns", m.return_type},
                       {"parameters", m.parameters},
                       {"dtypes", dt},
                       {"ops", it == by_method.end() ? json::array() : json(it->second)},
                       {"implemented", impl}});
  }
  j["methods"] = methods;
  json ops = json::array();
  for (const OpInfo& op : Ops()) {
    json attrs = json::array();
    for (const AttrSpec& a : op.attrs) {
      json attr = {{"name", a.name}, {"type", AttrTypeName(a.type)}, {"required", a.required}};
      if (!a.required) attr["default"] = a.default_value;
      attrs.push_back(attr);
    }
    json dt = json::array();
    for (DType d : AllDTypes()) {
      if (op.dtypes.Contains(d)) dt.push_back(DTypeName(d));
    }
    json ref_methods = json::array();
    for (MethodId id : op.reference_methods) ref_methods.push_back(Method(id).QualifiedName());
    json bp_methods = json::array();
    for (MethodId id : op.methods) bp_methods.push_back(Method(id).QualifiedName());
    ops.push_back({{"id", op.id},
                   {"domain", op.domain},
                   {"required", op.required},
                   {"reference_link",
                    op.required ? json{{"kind", LinkKindName(op.reference_link)},
                                       {"methods", ref_methods},
                                       {"note", op.reference_note}}
                                : json(nullptr)},
                   {"link", {{"kind", LinkKindName(op.link)}, {"methods", bp_methods}}},
                   {"inputs", op.inputs},
                   {"outputs", op.outputs},
                   {"attrs", attrs},
                   {"dtypes", dt},
                   {"alias_of", op.alias_of},
                   {"summary", op.summary}});
  }
  j["ops"] = ops;
  return j;
}

std::string InventoryMarkdown(const std::vector<DeviceKernels>& devices, const DispatchRecord* dispatch) {
  Counts c = Count();
  std::ostringstream md;
  auto implemented_on = [&](MethodId id) {
    std::string out;
    for (const DeviceKernels& d : devices) {
      if (d.implements(id)) out += (out.empty() ? "" : ", ") + d.device;
    }
    return out.empty() ? std::string("—") : out;
  };

  // The methods the dispatch audit saw the executor call for the op (its canonical ID's record).
  auto recorded = [&](const OpInfo& op) -> std::string {
    const OpInfo* canonical = ResolveOp(op.id);
    const auto it = dispatch->find(canonical->id);
    if (it == dispatch->end()) return "not recorded";
    return it->second.empty() ? std::string("none") : Joined(it->second);
  };

  md << "# Backend method inventory (T1.2)\n\n"
        "Generated by `backplane inventory --format md` from the live catalog "
        "(`include/backplane/backend/*.hpp`, `src/catalog/required_ops.inc`). Do not edit by "
        "hand: `make docs` regenerates it and a test fails when it is stale.\n\n"
        "\"Implemented\" means a kernel is registered for the method on that device. It does not "
        "mean verified: verification is recorded by `backplane verify` in the dispatch and "
        "coverage matrices.\n\n"
     << (dispatch ? "\"Executor calls (recorded)\" is what the dispatch audit "
                    "(`conformance::RunDispatchAudit`) saw: every device probe of the op, in every dtype, "
                    "as a one-node graph through the Executor on the CPU backend behind a recording "
                    "backend. A test fails when a Backplane link names a method no run reached.\n\n"
                  : "");

  md << "## Summary\n\n| Item | Count |\n|---|---|\n";
  md << fmt::format("| Backend methods ({} seed surfaces) | {} |\n", c.seed_surfaces,
                    c.seed_methods);
  md << fmt::format("| Required operation IDs | {} |\n", c.required);
  md << fmt::format("| Required ops → direct Backend method | {} |\n", c.links[LinkKind::Direct]);
  md << fmt::format("| Required ops → composite Backend methods | {} |\n",
                    c.links[LinkKind::Composite]);
  md << fmt::format("| Required ops → kernel registry (not on Backend) | {} |\n",
                    c.links[LinkKind::KernelRegistry]);
  md << fmt::format("| Required ops → graph-only (no compute kernel) | {} |\n",
                    c.links[LinkKind::GraphOnly]);
  md << fmt::format("| Backend methods with no required-op ID | {} |\n\n",
                    c.seed_backend_only.size());

  md << "Backplane's own view:\n\n| Item | Count |\n|---|---|\n";
  md << fmt::format("| Surfaces | {} |\n", Surfaces().size());
  md << fmt::format("| Backend methods | {} |\n", Methods().size());
  md << fmt::format("| Operation IDs (required and extended) | {} |\n", Ops().size());
  for (const DeviceKernels& d : devices) {
    int count = 0;
    for (const MethodInfo& m : Methods()) count += d.implements(m.id) ? 1 : 0;
    md << fmt::format("| Methods implemented on {} | {} |\n", d.device, count);
  }
  md << fmt::format("| Required ops still without a Backend method | {} |\n",
                    c.registry_only_required);
  md << fmt::format("| Backend methods without an operation ID | {} |\n\n",
                    c.without_op_id.size());

  md << "## Surfaces\n\n| Surface | Methods |";
  for (const DeviceKernels& d : devices) md << " Implemented on " << d.device << " |";
  md << " Not implemented |\n|---|---|";
  for (size_t i = 0; i < devices.size(); ++i) md << "---|";
  md << "---|\n";
  for (const SurfaceInfo& s : Surfaces()) {
    md << "| " << s.name << " | " << s.method_count << " |";
    std::vector<std::string> missing;
    for (const DeviceKernels& d : devices) {
      int count = 0;
      for (const MethodInfo& m : Methods()) {
        if (m.surface == s.name && d.implements(m.id)) ++count;
      }
      md << " " << count << " |";
    }
    for (const MethodInfo& m : Methods()) {
      if (m.surface != s.name) continue;
      bool anywhere = false;
      for (const DeviceKernels& d : devices) anywhere = anywhere || d.implements(m.id);
      if (!anywhere) missing.push_back(std::string(m.method));
    }
    md << " " << (missing.empty() ? "—" : Joined(missing)) << " |\n";
  }

  md << "\n## Cross-link kinds (the seed's reference links)\n";
  const std::pair<LinkKind, const char*> kinds[] = {
      {LinkKind::Direct, "Direct"},
      {LinkKind::Composite, "Composite"},
      {LinkKind::KernelRegistry, "Kernel registry"},
      {LinkKind::GraphOnly, "Graph-only"}};
  for (const auto& [kind, title] : kinds) {
    md << fmt::format("\n### {} ({})\n\n", title, c.links[kind]);
    const bool with_methods = kind == LinkKind::Direct || kind == LinkKind::Composite;
    md << (with_methods ? "| Operation ID | Backend methods | Backplane link |" : "| Operation ID | Note | Backplane link |")
       << (dispatch ? " Executor calls (recorded) |\n|---|---|---|---|\n" : "\n|---|---|---|\n");
    for (const OpInfo& op : Ops()) {
      if (!op.required || op.reference_link != kind) continue;
      const std::string target =
          with_methods ? MethodList(op.reference_methods) : op.reference_note;
      std::string ours = std::string(LinkKindName(op.link));
      if (!op.methods.empty()) ours += ": " + MethodList(op.methods);
      md << "| `" << op.id << "` | " << target << " | " << ours << " |";
      if (dispatch) md << " " << recorded(op) << " |";
      md << "\n";
    }
  }

  md << fmt::format("\n## Backend-only methods ({})\n\n", c.seed_backend_only.size());
  md << "Methods no required operation ID links to in the seed's cross-link table.\n\n";
  std::string current;
  for (MethodId id : c.seed_backend_only) {
    const MethodInfo& m = Method(id);
    if (m.surface != current) {
      if (!current.empty()) md << "\n";
      current = std::string(m.surface);
      md << "- **" << current << "**: ";
    } else {
      md << ", ";
    }
    md << m.method;
  }
  md << "\n";

  md << "\n## Gaps for R1\n\n";
  md << fmt::format(
      "- Required ops that still have no Backend method (kernel-registry links): {}.\n",
      c.registry_only_required);
  md << fmt::format("- Backend methods without an operation ID: {}.\n", c.without_op_id.size());
  md << fmt::format("- Methods without a kernel on cpu: {}.\n",
                    [&] {
                      int n = 0;
                      for (const MethodInfo& m : Methods()) {
                        bool on_cpu = false;
                        for (const DeviceKernels& d : devices) {
                          if (d.device == "cpu") on_cpu = d.implements(m.id);
                        }
                        n += on_cpu ? 0 : 1;
                      }
                      return n;
                    }());

  md << "\n## Methods\n\n| Method | Family | dtypes | Operation IDs (Backplane links) | "
        "Implemented on |\n|---|---|---|---|---|\n";
  const auto by_method = OpsByMethod();
  for (const MethodInfo& m : Methods()) {
    std::vector<std::string> dts;
    for (DType d : AllDTypes()) {
      if (m.dtypes.Contains(d)) dts.emplace_back(DTypeName(d));
    }
    const auto it = by_method.find(m.id);
    std::vector<std::string> ops;
    if (it != by_method.end()) {
      for (const std::string& id : it->second) ops.push_back("`" + id + "`");
    }
    md << "| " << m.QualifiedName() << " | " << m.family << " | " << Joined(dts) << " | "
       << Joined(ops) << " | " << implemented_on(m.id) << " |\n";
  }

  md << "\n## Operations\n\n| # | Operation ID | Domain | Inputs | Outputs | Attributes | "
        "dtypes | Alias of |"
     << (dispatch ? " Executor calls (recorded) |\n|---|---|---|---|---|---|---|---|---|\n"
                  : "\n|---|---|---|---|---|---|---|---|\n");
  for (const OpInfo& op : Ops()) {
    std::vector<std::string> dts;
    for (DType d : AllDTypes()) {
      if (op.dtypes.Contains(d)) dts.emplace_back(DTypeName(d));
    }
    md << "| " << (op.required ? std::to_string(op.required_index + 1) : "ext") << " | `"
       << op.id << "` | " << op.domain << " | " << Joined(op.inputs) << " | "
       << Joined(op.outputs) << " | " << AttrsText(op) << " | " << Joined(dts) << " | "
       << (op.alias_of.empty() ? "—" : "`" + op.alias_of + "`") << " |";
    if (dispatch) md << " " << recorded(op) << " |";
    md << "\n";
  }
  return md.str();
}

}  // namespace backplane::catalog
