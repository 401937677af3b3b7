// Shared by the ONNX importer tests: a hand-built ::onnx::ModelProto whose Save() writes it to a
// temporary file, and helpers that add typed attributes to a node.
#pragma once

#include <onnx/onnx_pb.h>

#include <cctype>
#include <concepts>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace backplane::onnx {

// Per-file settings of a ModelBuilder; the defaults are those of importer_test.cpp.
struct ModelOptions {
  std::string graph_name = "test";
  std::string save_dir = "backplane_onnx_tests";  // under the system temporary directory
  int64_t ir_version = 8;
  std::string node_name;                       // when set, the name of every node not named explicitly
  bool node_outputs_are_graph_outputs = false;  // Node() also adds each output to the graph outputs
};

// A model under construction, written to a temporary file by Save().
struct ModelBuilder {
  ::onnx::ModelProto m;
  ModelOptions options;
  explicit ModelBuilder(int64_t opset, ModelOptions opts = {}) : options(std::move(opts)) {
    m.set_ir_version(options.ir_version);
    auto* o = m.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    m.mutable_graph()->set_name(options.graph_name);
  }
  ::onnx::GraphProto& g() { return *m.mutable_graph(); }
  // Dims: a number is a fixed size, a name a symbolic one, "" an unnamed dynamic one.
  void Input(const std::string& name, const std::vector<std::string>& dims, int elem = ::onnx::TensorProto::FLOAT) {
    auto* v = g().add_input();
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem);
    auto* shape = t->mutable_shape();  // a scalar still has a (rank-0) shape
    for (const std::string& d : dims) {
      auto* dim = shape->add_dim();
      if (!d.empty() && std::isdigit(static_cast<unsigned char>(d[0]))) {
        dim->set_dim_value(std::stoll(d));
      } else if (!d.empty()) {
        dim->set_dim_param(d);
      }
    }
  }
  // Fixed dims from a Shape (a template, so that a braced list picks one of the other overloads).
  template <class Dims>
    requires std::same_as<Dims, std::vector<int64_t>>
  void Input(const std::string& name, const Dims& dims, int elem = ::onnx::TensorProto::FLOAT) {
    auto* t = g().add_input();
    t->set_name(name);
    auto* tt = t->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    tt->mutable_shape();  // a scalar still has a (rank-0) shape
    for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
  }
  void Input(const std::string& name, std::initializer_list<int64_t> dims, int elem = ::onnx::TensorProto::FLOAT) {
    Input(name, std::vector<int64_t>(dims), elem);
  }
  void Output(const std::string& name) { g().add_output()->set_name(name); }
  ::onnx::TensorProto* Init(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& values) {
    ::onnx::TensorProto* t = g().add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
    return t;
  }
  // An initializer of any integer or float ONNX type, values in int32_data / float_data / int64_data.
  void Init(const std::string& name, const std::vector<int64_t>& dims, int elem, const std::vector<double>& values) {
    ::onnx::TensorProto* t = g().add_initializer();
    t->set_name(name);
    t->set_data_type(elem);
    for (int64_t d : dims) t->add_dims(d);
    for (double v : values) {
      if (elem == ::onnx::TensorProto::FLOAT) t->add_float_data(static_cast<float>(v));
      else if (elem == ::onnx::TensorProto::INT64) t->add_int64_data(static_cast<int64_t>(v));
      else t->add_int32_data(static_cast<int32_t>(v));
    }
  }
  // A rank-1 INT64 initializer.
  void InitInts(const std::string& name, const std::vector<int64_t>& values) {
    ::onnx::TensorProto* t = g().add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
  }
  // An INT64 (or, with `type`, INT32) initializer of the given dims.
  void InitInts(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int64_t>& values,
                int type = ::onnx::TensorProto::INT64) {
    ::onnx::TensorProto* t = g().add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t v : values) {
      if (type == ::onnx::TensorProto::INT64) t->add_int64_data(v);
      else t->add_int32_data(static_cast<int32_t>(v));
    }
  }
  ::onnx::NodeProto* Node(const std::string& op, const std::vector<std::string>& in, const std::vector<std::string>& out,
                          const std::string& name = "") {
    auto* n = g().add_node();
    n->set_op_type(op);
    n->set_name(!name.empty() ? name : !options.node_name.empty() ? options.node_name : out.at(0));
    for (const auto& s : in) n->add_input(s);
    for (const auto& s : out) {
      n->add_output(s);
      if (options.node_outputs_are_graph_outputs) g().add_output()->set_name(s);
    }
    return n;
  }
  std::string Save(const std::string& file) {
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / options.save_dir;
    std::filesystem::create_directories(dir);
    const std::string path = (dir / file).string();
    std::ofstream f(path, std::ios::binary);
    m.SerializeToOstream(&f);
    return path;
  }
};

inline void AttrFloat(::onnx::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
inline void AttrInt(::onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(v);
}
inline void AttrInts(::onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
inline void AttrString(::onnx::NodeProto* n, const std::string& name, const std::string& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::STRING);
  a->set_s(v);
}
inline void AttrStrings(::onnx::NodeProto* n, const std::string& name, const std::vector<std::string>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::STRINGS);
  for (const auto& s : v) a->add_strings(s);
}
// A GRAPH attribute (a subgraph named `name`), returned for the caller to fill.
inline ::onnx::GraphProto* AttrGraph(::onnx::NodeProto* n, const std::string& name) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::GRAPH);
  a->mutable_g()->set_name(name);
  return a->mutable_g();
}

}  // namespace backplane::onnx
