// RunNodeTest: one ONNX backend test directory through ImportOnnx and the CPU executor, compared
// like numpy.testing.assert_allclose.
#include "backplane/onnx/node_test.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/error.hpp"
#include "backplane/onnx/importer.hpp"
#include "backplane/runtime/executor.hpp"

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

// Reads tensors and names them (the file's name, else the graph's name at the same position).
std::map<std::string, Tensor> ReadNamed(const std::vector<fs::path>& files, const std::vector<std::string>& names,
                                        const std::string& what) {
  std::map<std::string, Tensor> out;
  for (size_t k = 0; k < files.size(); ++k) {
    NamedTensor t = ReadTensorProtoFile(files[k].string());
    std::string name = t.name;
    if (name.empty() || std::find(names.begin(), names.end(), name) == names.end()) {
      if (k >= names.size()) {
        throw Error(ErrorCode::InvalidArgument, "onnx", fmt::format("{} has more {} files than the graph has", files[k].string(), what));
      }
      name = names[k];
    }
    out[name] = t.tensor;
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
    const std::vector<std::string> shape_defining = ShapeDefiningInputNames(model);
    std::vector<fs::path> sets;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.is_directory() && e.path().filename().string().starts_with("test_data_set_")) sets.push_back(e.path());
    }
    std::sort(sets.begin(), sets.end());
    if (sets.empty()) throw Error(ErrorCode::InvalidArgument, "onnx", fmt::format("{}: no test_data_set_* directory", directory));
    auto backend = cpu::CreateBackend();
    for (const fs::path& set : sets) {
      std::map<std::string, Tensor> inputs = ReadNamed(Numbered(set, "input"), input_names, "input");
      const std::map<std::string, Tensor> expected = ReadNamed(Numbered(set, "output"), output_names, "output");
      ImportOptions io;
      if (options.bind_integer_inputs) {
        for (auto it = inputs.begin(); it != inputs.end();) {
          const bool shapes = std::find(shape_defining.begin(), shape_defining.end(), it->first) != shape_defining.end();
          if (IsInteger(it->second.dtype()) || it->second.dtype() == DType::Bool || shapes) {
            io.bind_inputs[it->first] = it->second;
            it = inputs.erase(it);
          } else {
            ++it;
          }
        }
      }
      ImportResult imported = ImportOnnx(model, io);
      r.op_types = imported.op_types;
      runtime::Executor executor(std::move(imported.graph), *backend);
      executor.LoadParams(imported.initializers);
      const std::map<std::string, Tensor> actual = executor.Run(inputs);
      for (const auto& [name, want] : expected) {
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
        const Compare c = AllClose(got, want, options.rtol, options.atol);
        r.max_abs_error = std::max(r.max_abs_error, c.max_abs);
        if (!c.ok) {
          r.status = NodeTestResult::Status::Failed;
          r.reason = fmt::format("{}: output '{}' element {} is {}, expected {} (max abs error {:.3g})",
                                 set.filename().string(), name, c.first_bad, got.GetDouble(c.first_bad),
                                 want.GetDouble(c.first_bad), c.max_abs);
          return r;
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
