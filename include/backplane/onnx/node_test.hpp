// Runs one ONNX backend test directory (model.onnx + test_data_set_*/input_*.pb, output_*.pb)
// through the importer and the CPU executor and compares like ONNX's backend tests
// (numpy.testing.assert_allclose: |actual - expected| <= atol + rtol |expected|).
#pragma once

#include <string>
#include <vector>

namespace backplane::onnx {

struct NodeTestOptions {
  double rtol = 1e-3;
  double atol = 1e-5;
  // Integer- and bool-typed graph inputs are bound as import-time constants (Backplane ops take shapes,
  // axes and indices as attributes, where ONNX often passes them as tensors), and so are float inputs
  // that define an output shape or sampling grid (Resize's roi, scales and sizes, Upsample's scales,
  // OneHot's depth, Range's and MelWeightMatrix's inputs).
  bool bind_integer_inputs = true;
};

struct NodeTestResult {
  enum class Status { Passed, Failed, Unsupported };
  Status status = Status::Failed;
  std::string reason;                 // one line; empty when passed
  std::vector<std::string> op_types;  // ONNX op types of the model's graph
  int data_sets = 0;
  double max_abs_error = 0.0;         // over every compared float output
};

std::string_view StatusName(NodeTestResult::Status status);  // "passed", "failed", "unsupported"

// Never throws for test failures: errors become the result's reason. Unsupported means the
// importer or the executor refused an op, attribute or dtype (ErrorCode NotImplemented or
// UnsupportedDType); anything else that goes wrong is a failure.
NodeTestResult RunNodeTest(const std::string& directory, const NodeTestOptions& options = {});

}  // namespace backplane::onnx
