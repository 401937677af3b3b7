// Conformance runners: one per signature family. A runner calls the reference kernel and the fast
// kernel of one method on the same seeded inputs for every size and compares the outputs with the
// tolerance table. Kernels arrive type-erased; a runner casts them back to its family's type.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "backplane/dtype.hpp"
#include "backplane/tolerance.hpp"

namespace backplane::conformance {

using ErasedKernel = void (*)();

template <class Fn>
Fn Unerase(ErasedKernel k) {
  return reinterpret_cast<Fn>(k);
}

struct RunContext {
  std::string method;  // "Surface.Method"
  DType dtype;
  std::vector<int64_t> sizes;
  uint64_t seed;
};

struct Measure {
  bool ok = true;
  double max_error = 0.0;
  std::string note;  // the first failing case
};

using Runner = std::function<Measure(ErasedKernel reference, ErasedKernel fast, const RunContext&)>;
using RunnerRegistry = std::map<std::string, Runner>;  // by family name

// Seeded values for a storage dtype: mostly N(0, scale), with +-0, +-Inf, NaN and large values
// mixed in when `specials` is set. Returned as raw storage (element bytes of `dtype`).
std::vector<uint8_t> RandomStorage(DType dtype, int64_t count, uint64_t seed, double scale = 2.0,
                                   bool specials = true);
double LoadAsDouble(const std::vector<uint8_t>& storage, DType dtype, int64_t i);

// Compares `count` elements of two storages; updates m (max error, first failure).
void CompareStorage(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want, DType dtype,
                    int64_t count, Tolerance tol, const std::string& where, Measure& m);
void CompareScalar(double got, double want, Tolerance tol, const std::string& where, Measure& m);

// Runs the reference call, then the fast one. True when both returned; when either threw, both
// must have thrown the same message (else m records the failure) and the outputs are not compared.
bool RunBoth(const std::function<void()>& reference, const std::function<void()>& fast, const std::string& where,
             Measure& m);

// The family runners, grouped by file.
void RegisterElementwiseRunners(RunnerRegistry& registry);  // Unary, Binary, Axpy
void RegisterActivationRunners(RunnerRegistry& registry);   // UnaryParam1/2, PReLUV, GLU families
void RegisterReductionRunners(RunnerRegistry& registry);    // Reduce, Dot, norms, RowReduce, losses
void RegisterNnRunners(RunnerRegistry& registry);           // Matmul, attention, conv, pool
void RegisterQuantRunners(RunnerRegistry& registry);        // Dequant, Quant, PosPop
void RegisterResearchBinaryRunners(RunnerRegistry& registry);  // BinaryOut
void RegisterPhysicsRunners(RunnerRegistry& registry);      // Laplacian, Stencil1D, FFT, Madelung
void RegisterCausalRunners(RunnerRegistry& registry);       // Cholesky, causal, Hawkes families
void RegisterNormRunners(RunnerRegistry& registry);         // Group/Instance/BatchNorm, RoPE, masks
void RegisterLossRunners(RunnerRegistry& registry);         // losses, gradients, sampling, dropout
void RegisterTrainingRunners(RunnerRegistry& registry);     // optimizers, embedding, shape
void RegisterResearchRunners(RunnerRegistry& registry);     // VSA, active inference, PC, Outer

}  // namespace backplane::conformance
