// Shared by the ONNX importer tests: f32 tensors, importing and running a saved model on the CPU
// backend, element comparison, and the one-line message of an expected Error.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/error.hpp"
#include "backplane/onnx/importer.hpp"
#include "backplane/runtime/executor.hpp"
#include "backplane/tensor.hpp"

namespace backplane::onnx {

inline Tensor F32(Shape shape, std::vector<double> v) { return Tensor::FromDoubles(DType::Float32, std::move(shape), v); }

inline std::map<std::string, Tensor> RunModel(const std::string& path, const std::map<std::string, Tensor>& inputs) {
  ImportResult r = ImportOnnx(path);
  auto backend = cpu::CreateBackend();
  runtime::Executor ex(std::move(r.graph), *backend);
  ex.LoadParams(r.initializers);
  return ex.Run(inputs);
}

inline void ExpectNear(const Tensor& t, const std::vector<double>& want, double tol = 1e-6) {
  ASSERT_EQ(t.numel(), static_cast<int64_t>(want.size()));
  for (int64_t i = 0; i < t.numel(); ++i) EXPECT_NEAR(t.GetDouble(i), want[static_cast<size_t>(i)], tol) << "element " << i;
}

// The one-line message of the Error `fn` throws.
template <class Fn>
std::string ErrorOf(Fn fn) {
  try {
    fn();
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    return msg;
  }
  ADD_FAILURE() << "no error";
  return "";
}

}  // namespace backplane::onnx
