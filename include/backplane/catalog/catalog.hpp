// The catalog: the one list of Backend methods and operation IDs, and the cross-links between
// them. The method list is expanded from the surface headers (include/backplane/backend/*.hpp);
// the operation list lives in src/catalog/required_ops.inc. Everything else is derived.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backplane/backend/backend.hpp"
#include "backplane/dtype.hpp"

namespace backplane::catalog {

enum class MethodId : uint16_t {
#define BP_METHOD_ENUM(S, M, F, D) S##_##M,
  BP_ALL_METHODS(BP_METHOD_ENUM)
#undef BP_METHOD_ENUM
};

inline constexpr int kMethodCount = 0
#define BP_METHOD_COUNT(S, M, F, D) +1
    BP_ALL_METHODS(BP_METHOD_COUNT)
#undef BP_METHOD_COUNT
    ;

struct MethodInfo {
  MethodId id;
  std::string_view surface;
  std::string_view method;
  std::string_view family;       // signature family, e.g. "Unary"
  std::string_view return_type;  // "void", "double", "int32_t"
  std::string_view parameters;   // the C++ parameter list
  DTypeSet dtypes;               // values accepted by the method's dtype argument
  std::string QualifiedName() const;  // "Activation.Exp"
};

struct SurfaceInfo {
  std::string_view name;
  int method_count;
  bool in_seed;  // one of the seed's 25 surfaces
};

std::span<const MethodInfo> Methods();
const MethodInfo& Method(MethodId id);
// "Activation.Exp" -> info; nullptr when unknown.
const MethodInfo* FindMethod(std::string_view qualified_name);
std::span<const SurfaceInfo> Surfaces();

enum class LinkKind { Direct, Composite, KernelRegistry, GraphOnly };
std::string_view LinkKindName(LinkKind kind);  // "direct", "composite", "kernel_registry", ...

enum class AttrType { Int, Float, Bool, String, IntList, FloatList };
std::string_view AttrTypeName(AttrType type);  // "int", "float", "bool", "string", "int[]", ...

struct AttrSpec {
  std::string name;
  AttrType type;
  bool required;              // no default
  std::string default_value;  // textual default when not required
};

struct OpInfo {
  std::string id;
  std::string domain;
  bool required;       // one of the seed's 119 required IDs
  int required_index;  // position in the seed's required list, -1 otherwise
  // The seed's cross-link (reproduces the reference inventory).
  LinkKind reference_link;
  std::vector<MethodId> reference_methods;  // direct/composite only
  std::string reference_note;               // kernel-registry/graph-only note
  // Backplane's cross-link: what the executor runs.
  LinkKind link;
  std::vector<MethodId> methods;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::vector<AttrSpec> attrs;
  DTypeSet dtypes;
  std::string alias_of;  // canonical ID when this ID is an alias, else empty
  std::string summary;
};

std::span<const OpInfo> Ops();
// Exact ID lookup (aliases are ops of their own); nullptr when unknown.
const OpInfo* FindOp(std::string_view id);
// Follows alias_of to the canonical op; nullptr when unknown.
const OpInfo* ResolveOp(std::string_view id_or_alias);

}  // namespace backplane::catalog
