// The catalog as Python data (the ops module and the stubs are generated from it), and attribute
// conversion from Python values.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "backplane/error.hpp"
#include "backplane/runtime/op_registry.hpp"
#include "bindings.hpp"

namespace backplane::python {
namespace {

std::string TypeName(nb::handle value) { return nb::cast<std::string>(nb::str(value.type().attr("__name__"))); }

[[noreturn]] void AttrTypeError(const std::string& op, const catalog::AttrSpec& spec, nb::handle value) {
  const std::string msg = fmt::format("{}: argument '{}' must be {}, got {}", op, spec.name,
                                      catalog::AttrTypeName(spec.type), TypeName(value));
  throw nb::type_error(msg.c_str());
}

int64_t ToInt(const std::string& op, const catalog::AttrSpec& spec, nb::handle v) {
  if (PyBool_Check(v.ptr()) || !PyIndex_Check(v.ptr())) AttrTypeError(op, spec, v);
  nb::object index = nb::steal(PyNumber_Index(v.ptr()));
  if (!index.is_valid()) throw nb::python_error();
  const long long x = PyLong_AsLongLong(index.ptr());
  if (x == -1 && PyErr_Occurred()) throw nb::python_error();
  return x;
}

double ToFloat(const std::string& op, const catalog::AttrSpec& spec, nb::handle v) {
  if (PyBool_Check(v.ptr()) || PyUnicode_Check(v.ptr()) || !PyNumber_Check(v.ptr())) AttrTypeError(op, spec, v);
  const double x = PyFloat_AsDouble(v.ptr());
  if (x == -1.0 && PyErr_Occurred()) throw nb::python_error();
  return x;
}

bool IsList(nb::handle v) { return PyList_Check(v.ptr()) || PyTuple_Check(v.ptr()); }

}  // namespace

ir::AttrValue ToAttr(const catalog::AttrSpec& spec, nb::handle v, const std::string& op) {
  switch (spec.type) {
    case catalog::AttrType::Int: return ToInt(op, spec, v);
    case catalog::AttrType::Float: return ToFloat(op, spec, v);
    case catalog::AttrType::Bool:
      if (!PyBool_Check(v.ptr()) && TypeName(v) != "bool_") AttrTypeError(op, spec, v);
      return PyObject_IsTrue(v.ptr()) == 1;
    case catalog::AttrType::String:
      if (!PyUnicode_Check(v.ptr())) AttrTypeError(op, spec, v);
      return nb::cast<std::string>(v);
    case catalog::AttrType::IntList: {
      std::vector<int64_t> out;
      if (!IsList(v)) {
        out.push_back(ToInt(op, spec, v));  // a single value is a one-element list (axis=1)
      } else {
        for (nb::handle item : v) out.push_back(ToInt(op, spec, item));
      }
      return out;
    }
    case catalog::AttrType::FloatList: {
      std::vector<double> out;
      if (!IsList(v)) {
        out.push_back(ToFloat(op, spec, v));
      } else {
        for (nb::handle item : v) out.push_back(ToFloat(op, spec, item));
      }
      return out;
    }
  }
  AttrTypeError(op, spec, v);
}

ir::AttrMap ToAttrs(const catalog::OpInfo& op, nb::handle kwargs) {
  ir::AttrMap attrs;
  if (kwargs.is_none()) return attrs;
  for (auto [key, value] : nb::cast<nb::dict>(kwargs)) {
    const std::string name = nb::cast<std::string>(key);
    if (value.is_none()) continue;  // the catalog default
    const catalog::AttrSpec* spec = nullptr;
    for (const catalog::AttrSpec& a : op.attrs) {
      if (a.name == name) spec = &a;
    }
    if (spec == nullptr) {
      std::vector<std::string> names;
      for (const catalog::AttrSpec& a : op.attrs) names.push_back(a.name);
      ThrowInvalidArgument(op.id, name, fmt::format("an attribute of {} ({})", op.id, names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "))),
                           "an unknown keyword");
    }
    attrs[name] = ToAttr(*spec, value, op.id);
  }
  return attrs;
}

nb::object FromAttr(const ir::AttrValue& value) {
  return std::visit([](const auto& v) -> nb::object { return nb::cast(v); }, value);
}

void BindCatalog(nb::module_& m) {
  m.def("catalog_ops", [] {
    nb::list ops;
    for (const catalog::OpInfo& op : catalog::Ops()) {
      nb::dict d;
      d["id"] = op.id;
      d["domain"] = op.domain;
      d["summary"] = op.summary;
      d["inputs"] = op.inputs;
      d["outputs"] = op.outputs;
      nb::list attrs;
      for (const catalog::AttrSpec& a : op.attrs) {
        nb::dict ad;
        ad["name"] = a.name;
        ad["type"] = std::string(catalog::AttrTypeName(a.type));
        ad["required"] = a.required;
        ad["default"] = a.default_value;
        attrs.append(ad);
      }
      d["attrs"] = attrs;
      std::vector<std::string> dtypes;
      for (DType t : AllDTypes()) {
        if (op.dtypes.Contains(t)) dtypes.emplace_back(DTypeName(t));
      }
      d["dtypes"] = dtypes;
      d["alias_of"] = op.alias_of;
      d["link"] = std::string(catalog::LinkKindName(op.link));
      std::vector<std::string> methods;
      for (catalog::MethodId id : op.methods) methods.push_back(catalog::Method(id).QualifiedName());
      d["methods"] = methods;
      const runtime::OpImpl* impl = runtime::Registry().Find(op.id);
      d["runnable"] = impl != nullptr;
      d["state"] = impl != nullptr ? impl->state : std::vector<std::string>{};
      const runtime::Arity arity = runtime::OpArity(op);
      d["min_inputs"] = arity.min_inputs;
      d["max_inputs"] = arity.max_inputs;
      d["min_outputs"] = arity.min_outputs;
      d["max_outputs"] = arity.max_outputs;
      ops.append(d);
    }
    return ops;
  }, "Every catalog operation as a dict (id, summary, inputs, outputs, attrs, dtypes, ...).");
}

}  // namespace backplane::python
