#include "backplane/catalog/catalog.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>

#include "backplane/error.hpp"

#define BP_STR_I(...) #__VA_ARGS__
#define BP_STR(...) BP_STR_I(__VA_ARGS__)

namespace backplane::catalog {
namespace {

constexpr std::array<MethodInfo, kMethodCount> kMethods{{
#define BP_METHOD_ROW(S, M, F, D) \
  {MethodId::S##_##M, #S, #M, #F, BP_STR(BP_RET_##F), BP_STR(BP_PARAMS_##F), D},
    BP_ALL_METHODS(BP_METHOD_ROW)
#undef BP_METHOD_ROW
}};

constexpr int kSurfaceCount = 0
#define BP_SURFACE_COUNT(S, LIST) +1
    BP_SURFACES(BP_SURFACE_COUNT)
#undef BP_SURFACE_COUNT
    ;

constexpr std::array<SurfaceInfo, kSurfaceCount> kSurfaces{{
#define BP_METHOD_ONE(S, M, F, D) +1
#define BP_SEED_SURFACE_ROW(S, LIST) {#S, 0 LIST(BP_METHOD_ONE), true},
#define BP_EXTENSION_SURFACE_ROW(S, LIST) {#S, 0 LIST(BP_METHOD_ONE), false},
    BP_SEED_SURFACES(BP_SEED_SURFACE_ROW) BP_EXTENSION_SURFACES(BP_EXTENSION_SURFACE_ROW)
#undef BP_SEED_SURFACE_ROW
#undef BP_EXTENSION_SURFACE_ROW
#undef BP_METHOD_ONE
}};

std::vector<std::string> SplitList(std::string_view text, char sep) {
  std::vector<std::string> parts;
  if (text.empty()) return parts;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(sep, start);
    parts.emplace_back(text.substr(start, end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return parts;
}

[[noreturn]] void CatalogError(std::string_view op, std::string_view detail) {
  throw Error(ErrorCode::Internal, fmt::format("catalog[{}]", op), detail);
}

AttrType ParseAttrType(std::string_view op, std::string_view text) {
  static const std::map<std::string_view, AttrType> kTypes{
      {"int", AttrType::Int},       {"float", AttrType::Float},
      {"bool", AttrType::Bool},     {"string", AttrType::String},
      {"int[]", AttrType::IntList}, {"float[]", AttrType::FloatList}};
  const auto it = kTypes.find(text);
  if (it == kTypes.end()) CatalogError(op, fmt::format("unknown attribute type '{}'", text));
  return it->second;
}

std::vector<AttrSpec> ParseAttrs(std::string_view op, std::string_view text) {
  std::vector<AttrSpec> attrs;
  for (const std::string& item : SplitList(text, ';')) {
    const size_t colon = item.find(':');
    if (colon == std::string::npos) CatalogError(op, fmt::format("attribute '{}' has no type", item));
    AttrSpec spec;
    spec.name = item.substr(0, colon);
    const size_t eq = item.find('=', colon);
    spec.type = ParseAttrType(op, std::string_view(item).substr(colon + 1, eq - colon - 1));
    spec.required = eq == std::string::npos;
    if (!spec.required) spec.default_value = item.substr(eq + 1);
    attrs.push_back(std::move(spec));
  }
  return attrs;
}

std::vector<MethodId> ParseMethods(std::string_view op, std::string_view text) {
  std::vector<MethodId> ids;
  for (const std::string& name : SplitList(text, ',')) {
    const MethodInfo* info = FindMethod(name);
    if (info == nullptr) CatalogError(op, fmt::format("links to unknown method '{}'", name));
    ids.push_back(info->id);
  }
  return ids;
}

DTypeSet LinkedDTypes(const std::vector<MethodId>& methods) {
  return methods.empty() ? DTypeSet{} : Method(methods.front()).dtypes;
}

std::vector<OpInfo> BuildOps() {
  constexpr LinkKind D = LinkKind::Direct;
  constexpr LinkKind C = LinkKind::Composite;
  constexpr LinkKind R = LinkKind::KernelRegistry;
  constexpr LinkKind G = LinkKind::GraphOnly;
  std::vector<OpInfo> ops;
  int index = 0;
  auto add = [&](const char* id, const char* domain, LinkKind ref_kind, const char* ref_target,
                 const char* bp_target, const char* inputs, const char* outputs,
                 const char* attrs, DTypeSet dtypes, const char* alias_of, const char* summary) {
    OpInfo op;
    op.id = id;
    op.domain = domain;
    op.required = true;
    op.required_index = index++;
    op.reference_link = ref_kind;
    const bool ref_has_methods = ref_kind == D || ref_kind == C;
    if (ref_has_methods) {
      op.reference_methods = ParseMethods(id, ref_target);
    } else {
      op.reference_note = ref_target;
    }
    if (std::string_view(bp_target).empty()) {
      op.link = ref_kind;
      op.methods = op.reference_methods;
    } else {
      op.methods = ParseMethods(id, bp_target);
      op.link = op.methods.size() == 1 ? D : C;
    }
    op.inputs = SplitList(inputs, ',');
    op.outputs = SplitList(outputs, ',');
    op.attrs = ParseAttrs(id, attrs);
    op.dtypes = dtypes.Empty() ? LinkedDTypes(op.methods) : dtypes;
    if (op.dtypes.Empty()) op.dtypes = kFloatDTypes;
    op.alias_of = alias_of;
    op.summary = summary;
    ops.push_back(std::move(op));
  };
#define BP_OP(...) add(__VA_ARGS__);
#include "required_ops.inc"
#undef BP_OP
  // Extended IDs: no reference link (the seed has no such ID); Backplane's link only.
  auto add_extended = [&](const char* id, const char* domain, const char* target,
                          const char* inputs, const char* outputs, const char* attrs,
                          DTypeSet dtypes, const char* alias_of, const char* summary) {
    add(id, domain, G, "not in the seed", target, inputs, outputs, attrs, dtypes, alias_of,
        summary);
    OpInfo& op = ops.back();
    op.required = false;
    op.required_index = -1;
    op.reference_note.clear();
    --index;
  };
#define BP_EXT_OP(...) add_extended(__VA_ARGS__);
#include "extended_ops.inc"
#undef BP_EXT_OP
  return ops;
}

const std::vector<OpInfo>& OpTable() {
  static const std::vector<OpInfo> ops = BuildOps();
  return ops;
}

}  // namespace

std::string MethodInfo::QualifiedName() const { return fmt::format("{}.{}", surface, method); }

std::span<const MethodInfo> Methods() { return kMethods; }

const MethodInfo& Method(MethodId id) { return kMethods[static_cast<size_t>(id)]; }

const MethodInfo* FindMethod(std::string_view qualified_name) {
  const size_t dot = qualified_name.find('.');
  if (dot == std::string_view::npos) return nullptr;
  const std::string_view surface = qualified_name.substr(0, dot);
  const std::string_view method = qualified_name.substr(dot + 1);
  for (const MethodInfo& info : kMethods) {
    if (info.surface == surface && info.method == method) return &info;
  }
  return nullptr;
}

std::span<const SurfaceInfo> Surfaces() { return kSurfaces; }

std::string_view LinkKindName(LinkKind kind) {
  switch (kind) {
    case LinkKind::Direct: return "direct";
    case LinkKind::Composite: return "composite";
    case LinkKind::KernelRegistry: return "kernel_registry";
    case LinkKind::GraphOnly: return "graph_only";
  }
  return "unknown";
}

std::string_view AttrTypeName(AttrType type) {
  switch (type) {
    case AttrType::Int: return "int";
    case AttrType::Float: return "float";
    case AttrType::Bool: return "bool";
    case AttrType::String: return "string";
    case AttrType::IntList: return "int[]";
    case AttrType::FloatList: return "float[]";
  }
  return "unknown";
}

std::span<const OpInfo> Ops() { return OpTable(); }

const OpInfo* FindOp(std::string_view id) {
  for (const OpInfo& op : OpTable()) {
    if (op.id == id) return &op;
  }
  return nullptr;
}

const OpInfo* ResolveOp(std::string_view id_or_alias) {
  const OpInfo* op = FindOp(id_or_alias);
  for (int hops = 0; op != nullptr && !op->alias_of.empty() && hops < 4; ++hops) {
    op = FindOp(op->alias_of);
  }
  return op;
}

}  // namespace backplane::catalog
