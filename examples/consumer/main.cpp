// Uses Backplane through its public headers only: the CPU backend's GELU and matmul on tensors,
// and a two-node graph run by the executor, each checked against a closed form. Exits 1 on a
// mismatch.
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/error.hpp"
#include "backplane/ir/graph.hpp"
#include "backplane/runtime/executor.hpp"
#include "backplane/tensor.hpp"

namespace bp = backplane;

namespace {

int failures = 0;

void Check(const char* what, double got, double want, double tol) {
  const bool ok = std::fabs(got - want) <= tol * (1.0 + std::fabs(want));
  if (!ok) {
    std::printf("MISMATCH %s: got %.9g, want %.9g\n", what, got, want);
    ++failures;
  }
}

double Gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

}  // namespace

int main() {
  try {
#ifdef BACKPLANE_VERSION  // set by the CMake targets; pkg-config --modversion backplane otherwise
    std::printf("backplane %s\n", BACKPLANE_VERSION);
#endif
    std::unique_ptr<bp::Backend> backend = bp::cpu::CreateBackend();

    // GELU(x) = x/2 (1 + erf(x / sqrt(2))) on an f32 tensor.
    const std::vector<double> xs = {-3.0, -1.0, -0.25, 0.0, 0.5, 1.0, 2.0, 4.0};
    const int64_t n = static_cast<int64_t>(xs.size());
    bp::Tensor x = bp::Tensor::FromDoubles(bp::DType::Float32, {n}, xs);
    bp::Tensor y(bp::DType::Float32, {n});
    backend->Activation().Gelu(y.data(), x.data(), n, bp::DType::Float32);
    for (int64_t i = 0; i < n; ++i) Check("gelu", y.GetDouble(i), Gelu(xs[i]), 1e-5);
    std::printf("gelu(1) = %.7f (closed form %.7f)\n", y.GetDouble(5), Gelu(1.0));

    // Matmul, f64: A[i][k] = i + k, B[k][j] = k j, so C[i][j] = j (i S1 + S2) with
    // S1 = sum k = K(K-1)/2 and S2 = sum k^2 = (K-1)K(2K-1)/6.
    const int64_t M = 3, K = 5, N = 4;
    bp::Tensor a(bp::DType::Float64, {M, K}), b(bp::DType::Float64, {K, N}), c(bp::DType::Float64, {M, N});
    for (int64_t i = 0; i < M; ++i)
      for (int64_t k = 0; k < K; ++k) a.data_as<double>()[i * K + k] = double(i + k);
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < N; ++j) b.data_as<double>()[k * N + j] = double(k * j);
    backend->Matmul().Matmul(c.data(), a.data(), b.data(), M, K, N, bp::DType::Float64);
    const double s1 = K * (K - 1) / 2.0, s2 = (K - 1) * K * (2 * K - 1) / 6.0;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) Check("matmul", c.data_as<double>()[i * N + j], j * (i * s1 + s2), 1e-12);
    std::printf("matmul C[2][3] = %g (closed form %g)\n", c.data_as<double>()[2 * N + 3], 3 * (2 * s1 + s2));

    // A graph: y = gelu(u @ w) with a symbolic batch, run by the executor.
    const std::string json = R"({
      "format": "backplane.graph", "version": 1, "name": "consumer",
      "inputs": [{"name": "u", "dtype": "f64", "shape": ["batch", 2]}],
      "params": [{"name": "w", "dtype": "f64", "shape": [2, 3], "init": {"kind": "constant", "value": 0.5}}],
      "nodes": [{"op": "math.matmul", "inputs": ["u", "w"], "outputs": ["h"]},
                {"op": "activation.gelu", "inputs": ["h"], "outputs": ["y"]}],
      "outputs": ["y"]
    })";
    bp::runtime::Executor executor(bp::ir::ParseGraph(json, "consumer"), *backend);
    const std::vector<double> us = {1.0, 1.0, -2.0, 0.5};  // rows: (1, 1), (-2, 0.5)
    const std::map<std::string, bp::Tensor> out =
        executor.Run({{"u", bp::Tensor::FromDoubles(bp::DType::Float64, {2, 2}, us)}});
    const bp::Tensor& g = out.at("y");
    if (g.shape() != bp::Shape{2, 3}) {
      std::printf("MISMATCH graph: output shape %s, want [2, 3]\n", bp::ShapeToString(g.shape()).c_str());
      return 1;
    }
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t j = 0; j < 3; ++j) Check("graph", g.GetDouble(r * 3 + j), Gelu(0.5 * (us[2 * r] + us[2 * r + 1])), 1e-12);
    std::printf("graph y[1][0] = %.9f (closed form gelu(-0.75) = %.9f)\n", g.GetDouble(3), Gelu(-0.75));

    // Errors cross the library boundary as backplane::Error (its typeinfo is exported).
    bool caught = false;
    try {
      bp::ir::ParseGraph(R"({"format": "backplane.graph", "version": 99, "nodes": [], "outputs": []})");
    } catch (const bp::Error& e) {
      caught = true;
      std::printf("bad graph: %s: %s\n", std::string(bp::ErrorCodeName(e.code())).c_str(), e.what());
    }
    if (!caught) {
      std::printf("MISMATCH: a graph of version 99 was accepted\n");
      ++failures;
    }
  } catch (const std::exception& e) {
    std::printf("error: %s\n", e.what());
    return 1;
  }
  if (failures != 0) {
    std::printf("consumer: %d mismatches\n", failures);
    return 1;
  }
  std::printf("consumer: all checks passed\n");
  return 0;
}
