// RunNodeTest: one ONNX backend test directory through ImportOnnx and the CPU executor, compared
// like numpy.testing.assert_allclose.
#include "backplane/onnx/node_test.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/error.hpp"
#include "backplane/onnx/importer.hpp"
#include "backplane/runtime/executor.hpp"
#include "onnx/tensor_proto.hpp"

namespace backplane::onnx {
namespace {

namespace fs = std::filesystem;

std::string OneLine(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

// The k-th "<prefix>_<k>.pb" files of a data set, in index order.
std::vector<fs::path> Numbered(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> files;
  for (int k = 0;; ++k) {
    const fs::path p = dir / fmt::format("{}_{}.pb", prefix, k);
    if (!fs::exists(p)) break;
    files.push_back(p);
  }
  return files;
}

// Reads values (tensors, sequences, optionals: by the graph's declared kind at the same position)
// and names them (the file's name, else the graph's name at the same position).
std::map<std::string, StructuredValue> ReadNamed(const std::vector<fs::path>& files, const std::vector<std::string>& names,
                                                 const std::map<std::string, StructuredValue::Kind>& kinds,
                                                 const std::string& what) {
  std::map<std::string, StructuredValue> out;
  for (size_t k = 0; k < files.size(); ++k) {
    if (k >= names.size()) {
      throw Error(ErrorCode::InvalidArgument, "onnx", fmt::format("{} has more {} files than the graph has", files[k].string(), what));
    }
    const auto kind = kinds.find(names[k]);
    NamedValue t = ReadValueProtoFile(files[k].string(), kind == kinds.end() ? StructuredValue::Kind::Tensor : kind->second);
    std::string name = t.name;
    if (name.empty() || std::find(names.begin(), names.end(), name) == names.end()) name = names[k];
    out[name] = std::move(t.value);
  }
  return out;
}

// Max |a - e| and whether every element is within atol + rtol |e| (NaN matches NaN).
struct Compare {
  bool ok = true;
  double max_abs = 0.0;
  int64_t first_bad = -1;
};

Compare AllClose(const Tensor& actual, const Tensor& expected, double rtol, double atol) {
  Compare c;
  const bool exact = !IsFloatingPoint(expected.dtype()) && !IsComplex(expected.dtype());
  for (int64_t i = 0; i < expected.numel(); ++i) {
    const double a = actual.GetDouble(i), e = expected.GetDouble(i);
    if (std::isnan(a) || std::isnan(e)) {
      if (std::isnan(a) != std::isnan(e) && c.ok) c = {false, c.max_abs, i};
      continue;
    }
    if (std::isinf(a) || std::isinf(e)) {
      if (a != e && c.ok) c = {false, c.max_abs, i};
      continue;
    }
    const double diff = std::fabs(a - e);
    c.max_abs = std::max(c.max_abs, diff);
    const bool good = exact ? a == e : diff <= atol + rtol * std::fabs(e);
    if (!good && c.ok) {
      c.ok = false;
      c.first_bad = i;
    }
  }
  return c;
}

// The element types the model declares for its graph inputs and outputs, by name.
std::map<std::string, DType> DeclaredDTypes(const std::string& model) {
  ::onnx::ModelProto m;
  const std::string bytes = ReadFileBytes(model, "model", uint64_t{1} << 31);
  if (!m.ParseFromString(bytes)) throw Error(ErrorCode::InvalidArgument, "onnx", fmt::format("{}: not a ModelProto", model));
  std::map<std::string, DType> out;
  auto add = [&](const auto& values) {
    for (const auto& v : values) {
      if (!v.type().has_tensor_type()) continue;
      if (const auto d = DTypeFromOnnx(v.type().tensor_type().elem_type())) out[v.name()] = *d;
    }
  };
  add(m.graph().input());
  add(m.graph().output());
  return out;
}

// ONNX's test generator stores bf16 data as uint16 bit patterns (NumPy has no bf16): a u16
// tensor where the graph declares bf16 is read as those bf16 values. Returns their names.
std::set<std::string> ReadBf16Bits(std::map<std::string, StructuredValue>& values,
                                   const std::map<std::string, DType>& declared) {
  std::set<std::string> names;
  for (auto& [name, v] : values) {
    if (v.kind != StructuredValue::Kind::Tensor) continue;
    Tensor& t = v.tensor;
    const auto it = declared.find(name);
    if (it == declared.end() || it->second != DType::BFloat16 || t.dtype() != DType::Uint16) continue;
    Tensor bf(DType::BFloat16, t.shape());
    if (t.nbytes() > 0) std::memcpy(bf.data(), t.data(), t.nbytes());
    t = std::move(bf);
    names.insert(name);
  }
  return names;
}

}  // namespace

std::string_view StatusName(NodeTestResult::Status status) {
  switch (status) {
    case NodeTestResult::Status::Passed: return "passed";
    case NodeTestResult::Status::Unsupported: return "unsupported";
    default: return "failed";
  }
}

NodeTestResult RunNodeTest(const std::string& directory, const NodeTestOptions& options) {
  NodeTestResult r;
  const fs::path dir(directory);
  const std::string model = (dir / "model.onnx").string();
  try {
    r.op_types = ModelOpTypes(model);
    const std::vector<std::string> input_names = GraphInputNames(model);
    const std::vector<std::string> output_names = GraphOutputNames(model);
    const std::map<std::string, StructuredValue::Kind> kinds = GraphValueKinds(model);
    const std::map<std::string, DType> declared = DeclaredDTypes(model);
    const std::vector<std::string> shape_defining = ShapeDefiningInputNames(model);
    std::vector<fs::path> sets;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.is_directory() && e.path().filename().string().starts_with("test_data_set_")) sets.push_back(e.path());
    }
    std::sort(sets.begin(), sets.end());
    if (sets.empty()) throw Error(ErrorCode::InvalidArgument, "onnx", fmt::format("{}: no test_data_set_* directory", directory));
    auto backend = cpu::CreateBackend();
    for (const fs::path& set : sets) {
      std::map<std::string, StructuredValue> read = ReadNamed(Numbered(set, "input"), input_names, kinds, "input");
      std::map<std::string, StructuredValue> expected = ReadNamed(Numbered(set, "output"), output_names, kinds, "output");
      // Inputs stored as integers stay bound like the integer ones (CastLike's 'like' data does not
      // even have its declared shape).
      const std::set<std::string> from_bits = ReadBf16Bits(read, declared);
      ReadBf16Bits(expected, declared);
      auto bind = [&](const Tensor& t) {
        return options.bind_integer_inputs && (IsInteger(t.dtype()) || t.dtype() == DType::Bool);
      };
      ImportOptions io;
      std::map<std::string, Tensor> inputs;
      for (const auto& [name, v] : read) {
        if (v.kind == StructuredValue::Kind::Tensor) {
          const bool shapes = std::find(shape_defining.begin(), shape_defining.end(), name) != shape_defining.end();
          if (bind(v.tensor) || (options.bind_integer_inputs && (from_bits.contains(name) || shapes))) {
            io.bind_inputs[name] = v.tensor;
          } else {
            inputs[name] = v.tensor;
          }
          continue;
        }
        // Sequences and optionals: the structure is bound; float leaves stay runtime inputs.
        StructuredValue s = v;
        std::vector<StructuredValue*> stack = {&s};
        while (!stack.empty()) {
          StructuredValue* x = stack.back();
          stack.pop_back();
          if (x->kind == StructuredValue::Kind::Tensor) x->runtime = !bind(x->tensor);
          for (StructuredValue& item : x->items) stack.push_back(&item);
        }
        for (const auto& [leaf, t] : StructuredLeaves(s, name)) {
          if (!bind(*t)) inputs[leaf] = *t;
        }
        io.structured_inputs[name] = std::move(s);
      }
      ImportResult imported = ImportOnnx(model, io);
      r.op_types = imported.op_types;
      const std::map<std::string, std::string> layouts = imported.structured_outputs;
      runtime::Executor executor(std::move(imported.graph), *backend);
      executor.LoadParams(imported.initializers);
      const std::map<std::string, Tensor> actual = executor.Run(inputs);
      for (const auto& [output, value] : expected) {
        const auto layout = layouts.find(output);
        const std::string got_layout = layout == layouts.end() ? "tensor" : layout->second;
        if (got_layout != StructuredLayout(value)) {
          r.status = NodeTestResult::Status::Failed;
          r.reason = fmt::format("{}: output '{}' is {}, expected {}", set.filename().string(), output, got_layout,
                                 StructuredLayout(value));
          return r;
        }
        for (const auto& [name, want_ptr] : StructuredLeaves(value, output)) {
          const Tensor& want = *want_ptr;
          const auto it = actual.find(name);
          if (it == actual.end()) throw Error(ErrorCode::Internal, "onnx", fmt::format("output '{}' was not produced", name));
          const Tensor& got = it->second;
          if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
            r.status = NodeTestResult::Status::Failed;
            r.reason = fmt::format("{}: output '{}' is {}{}, expected {}{}", set.filename().string(), name,
                                   DTypeName(got.dtype()), ShapeToString(got.shape()), DTypeName(want.dtype()),
                                   ShapeToString(want.shape()));
            return r;
          }
          // bf16 holds 8 significant bits: its results agree to one bf16 step (up to 2^-7 relative), not
          // to f32's rtol (ONNX 1.12's expected bf16 values truncate; Backplane rounds to nearest even).
          const double rtol = want.dtype() == DType::BFloat16 ? std::max(options.rtol, 1.0 / 128) : options.rtol;
          const Compare c = AllClose(got, want, rtol, options.atol);
          r.max_abs_error = std::max(r.max_abs_error, c.max_abs);
          if (!c.ok) {
            r.status = NodeTestResult::Status::Failed;
            r.reason = fmt::format("{}: output '{}' element {} is {}, expected {} (max abs error {:.3g})",
                                   set.filename().string(), name, c.first_bad, got.GetDouble(c.first_bad),
                                   want.GetDouble(c.first_bad), c.max_abs);
            return r;
          }
        }
      }
      ++r.data_sets;
    }
    r.status = NodeTestResult::Status::Passed;
  } catch (const Error& e) {
    const bool unsupported = e.code() == ErrorCode::NotImplemented || e.code() == ErrorCode::UnsupportedDType;
    r.status = unsupported ? NodeTestResult::Status::Unsupported : NodeTestResult::Status::Failed;
    r.reason = OneLine(e.what());
  } catch (const std::exception& e) {
    r.status = NodeTestResult::Status::Failed;
    r.reason = OneLine(e.what());
  }
  return r;
}

}  // namespace backplane::onnx
