// Conformance runners: one per signature family. A runner calls the reference kernel and the fast
// kernel of one method on the same seeded inputs for every size and compares the outputs with the
// tolerance table. Kernels arrive type-erased; a runner casts them back to its family's type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
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

// ---- Helpers shared by the runner files -----------------------------------------------------------

constexpr int64_t kLarge = 3 * 65536 + 17;  // one size beyond 64K elements: several chunks, threaded
constexpr uint8_t kGuard = 0xA5;            // fill byte around outputs that a kernel must not touch
constexpr Tolerance kExact{0.0, 0.0};       // bit-exact comparison (NaN still equals NaN)

// Records a failure; the first note wins.
void Fail(Measure& m, const std::string& note);

// Runs fn; returns its error message, or "" when it did not throw.
template <class Fn>
std::string ErrorOf(Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// Both threw the same error (true: nothing more to compare), or neither threw (false); a mismatch fails.
bool SameErrors(const std::string& got, const std::string& want, const std::string& where, Measure& m);

// RunBoth, and a fast kernel that threw must have left fast_out untouched.
bool RunBoth(const std::function<void()>& reference, const std::function<void()>& fast,
             const std::vector<uint8_t>& fast_out, const std::string& where, Measure& m);

// An invalid call, call(true) on the reference and call(false) on the fast kernel: the errors must be
// identical and non-empty, and (with `out`) the fast kernel must not have written its output.
template <class Call>
void ExpectSameError(const std::string& where, std::vector<uint8_t>& out, Call&& call, Measure& m) {
  const std::vector<uint8_t> before = out;
  const std::string want = ErrorOf([&] { call(true); });
  out = before;
  const std::string got = ErrorOf([&] { call(false); });
  if (want.empty()) {
    Fail(m, where + ": the reference accepted an invalid call");
  } else if (got != want) {
    Fail(m, where + ": error mismatch: got '" + got + "', want '" + want + "'");
  } else if (out != before) {
    Fail(m, where + ": the fast kernel wrote its output before throwing");
  }
}
template <class Call>
void ExpectSameError(const std::string& where, Call&& call, Measure& m) {
  std::vector<uint8_t> none;
  ExpectSameError(where, none, call, m);
}

// The quick matrix (unit tests, emulated Arm targets): ConformanceSizes(true) ends below 4096.
bool Quick(const RunContext& c);

// Pins the quick matrix to one thread for the scope (OpenMP regions stall under qemu-user; the chunked
// paths are the same); the full matrix keeps the configured thread count.
class QuickThreads {
 public:
  explicit QuickThreads(const RunContext& c);
  ~QuickThreads();
  QuickThreads(const QuickThreads&) = delete;
  QuickThreads& operator=(const QuickThreads&) = delete;

 private:
  int previous_;
  bool active_;
};

// The sizes with kLarge appended.
std::vector<int64_t> WithLarge(std::vector<int64_t> sizes);

// RandomStorage memoised for the method being verified: the runner runs once per target on the same
// seeded inputs, and generating them would dominate the run time. Valid until the method changes.
const std::vector<uint8_t>& Inputs(const RunContext& c, DType dtype, int64_t n, uint64_t seed, double scale = 2.0,
                                   bool specials = true);

// Kernels must not assume alignment: odd sizes run on buffers shifted by one element (Offset bytes);
// Shifted copies s after `offset` guard bytes, Unshifted drops the first `offset` bytes.
size_t Offset(DType dtype, int64_t n);
std::vector<uint8_t> Shifted(const std::vector<uint8_t>& s, size_t offset);
std::vector<uint8_t> Unshifted(const std::vector<uint8_t>& s, size_t offset);

// Stores v (rounded to f32 first for f16/bf16) as element i of a float storage; other dtypes: no-op.
void StoreAsDouble(std::vector<uint8_t>& s, DType dtype, int64_t i, double v);
// The first `count` elements as doubles.
std::vector<double> Widened(const std::vector<uint8_t>& s, DType dtype, int64_t count);

// CompareStorage, formatting the location only for elements that fail.
void CompareElements(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want, DType dtype, int64_t count,
                     Tolerance tol, const std::string& where, Measure& m);
// |got - want| <= tol.abs + tol.rel * cond[i] for finite values (cond.size() elements); non-finite
// values must match.
void CompareBounded(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want, DType dtype,
                    const std::vector<double>& cond, Tolerance tol, const std::string& where, Measure& m);
// The bytes of out from `used` on must still be kGuard.
void CheckGuard(const std::vector<uint8_t>& out, size_t used, const std::string& where, Measure& m);
// The two storages must agree byte for byte, guard bytes included (bit-exact kernels).
void CompareBytes(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want, const std::string& where,
                  Measure& m);
// As CompareBytes, except that for f32/f64 any NaN matches any NaN: the sign and payload of a NaN
// that arithmetic produces depend on the operand order the compiler picked (x86 returns the first
// operand's NaN), not on the kernel.
void CompareBytesAnyNaN(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want, DType dtype,
                        const std::string& where, Measure& m);

// Scalar results of f32/f16/bf16 inputs are accumulated in f64 and rounded to f32: the f32 bound;
// f64 and int8 inputs use their own.
Tolerance ScalarTolerance(DType dtype);

// The two input sets of a case: RandomStorage with and without specials.
struct InputSet {
  const char* name;
  bool specials;
};
inline constexpr InputSet kInputSets[] = {{"specials", true}, {"plain", false}};

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
void RegisterBlockQuantRunners(RunnerRegistry& registry);   // BlockDequant, BlockMatmul
void RegisterTensorElementwiseRunners(RunnerRegistry& registry);  // Compare, Logical, Where, Cast, Pow, Mod, Round
void RegisterTensorAxisRunners(RunnerRegistry& registry);         // ArgReduce, CumSum, Trilu, GatherElements
void RegisterTensorIndexRunners(RunnerRegistry& registry);        // TopK, ScatterElements, ScatterND, GatherND
void RegisterPoolNdRunners(RunnerRegistry& registry);             // PoolNd
void RegisterSpatialRunners(RunnerRegistry& registry);            // GridSample, RoiAlign

}  // namespace backplane::conformance
