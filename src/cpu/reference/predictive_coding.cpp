// Scalar reference kernels for the PredictiveCoding surface: one linear predictive-coding layer
// (Rao & Ballard 1999) minimising E = 1/2 |o - W s|^2, with W [outDim x inDim] row-major, s
// [inDim], o and e [outDim]. Sums and updates are float64 for every storage format, rounded once on
// store; every input is read before the output is written, so the output may alias any input.
// Semantics: docs/semantics/predictive_coding.md.
#include <fmt/format.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "backplane/error.hpp"
#include "cpu/reference/common.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace predictive_coding {
namespace {

// The accepted set is kFloatDTypes. A switch rather than DTypeSet::Contains, so that a value
// outside the enum is rejected too.
void CheckFloatDType(std::string_view op, DType dtype) {
  switch (dtype) {
    case DType::Float64:
    case DType::Float32:
    case DType::Float16:
    case DType::BFloat16:
      return;
    default:
      ThrowUnsupportedDType(op, "dtype", dtype, kFloatDTypes);
  }
}

// Validates dtype, the two dimensions and their product; returns outDim * inDim.
int64_t CheckShape(std::string_view op, DType dtype, int64_t outDim, int64_t inDim) {
  CheckFloatDType(op, dtype);
  CheckNonNegative(op, "outDim", outDim);
  CheckNonNegative(op, "inDim", inDim);
  int64_t cells = 0;
  if (__builtin_mul_overflow(outDim, inDim, &cells)) {
    ThrowInvalidArgument(op, "inDim", "small enough that outDim * inDim fits in int64",
                         fmt::format("{} x {}", outDim, inDim));
  }
  return cells;
}

double CheckLearningRate(std::string_view op, const PredictiveCodingConfig& config) {
  CheckFinite(op, "config.LearningRate", config.LearningRate);
  return static_cast<double>(config.LearningRate);
}

}  // namespace

// output[o] = sum_i W[o][i] s[i]. inDim 0 writes zeros (the empty sum).
void Prediction(BP_PARAMS_Prediction) {
  constexpr std::string_view op = "PredictiveCoding.Prediction";
  const int64_t cells = CheckShape(op, dtype, outDim, inDim);
  CheckPointer(op, "weights", weights, cells);
  CheckPointer(op, "representation", representation, inDim);
  CheckPointer(op, "output", output, outDim);
  const std::vector<double> w = Widen<double>(weights, cells, dtype);
  const std::vector<double> s = Widen<double>(representation, inDim, dtype);

  std::vector<double> prediction(static_cast<size_t>(outDim), 0.0);
  for (int64_t o = 0; o < outDim; ++o) {
    double sum = 0.0;
    for (int64_t i = 0; i < inDim; ++i) {
      sum += w[static_cast<size_t>(o * inDim + i)] * s[static_cast<size_t>(i)];
    }
    prediction[static_cast<size_t>(o)] = sum;
  }
  Narrow(prediction, output, dtype);
}

// output[i] = observed[i] - predicted[i], in the compute type of dtype.
void PredictionError(BP_PARAMS_BinaryOut) {
  constexpr std::string_view op = "PredictiveCoding.PredictionError";
  CheckFloatDType(op, dtype);
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "observed", left, count);
  CheckPointer(op, "predicted", right, count);
  CheckPointer(op, "output", output, count);
  WithComputeType(op, "dtype", dtype, [&](auto zero) {
    using T = decltype(zero);
    for (int64_t i = 0; i < count; ++i) {
      const T observed = Load<T>(left, i, dtype);
      const T predicted = Load<T>(right, i, dtype);
      Store<T>(output, i, dtype, observed - predicted);
    }
  });
}

// Inference step, gradient descent on E in s: output[i] = s[i] + lr sum_o W[o][i] e[o].
// outDim 0 copies s.
void UpdateRepresentation(BP_PARAMS_PredictiveUpdate) {
  constexpr std::string_view op = "PredictiveCoding.UpdateRepresentation";
  const int64_t cells = CheckShape(op, dtype, outDim, inDim);
  CheckPointer(op, "weights", weights, cells);
  CheckPointer(op, "representation", representation, inDim);
  CheckPointer(op, "predictionError", predictionError, outDim);
  CheckPointer(op, "output", output, inDim);
  const double lr = CheckLearningRate(op, config);
  const std::vector<double> w = Widen<double>(weights, cells, dtype);
  const std::vector<double> s = Widen<double>(representation, inDim, dtype);
  const std::vector<double> e = Widen<double>(predictionError, outDim, dtype);

  std::vector<double> updated(static_cast<size_t>(inDim), 0.0);
  for (int64_t i = 0; i < inDim; ++i) {
    double gradient = 0.0;  // (W^T e)[i] = -dE/ds[i]
    for (int64_t o = 0; o < outDim; ++o) {
      gradient += w[static_cast<size_t>(o * inDim + i)] * e[static_cast<size_t>(o)];
    }
    updated[static_cast<size_t>(i)] = s[static_cast<size_t>(i)] + lr * gradient;
  }
  Narrow(updated, output, dtype);
}

// Learning step, gradient descent on E in W: output[o][i] = W[o][i] + lr e[o] s[i].
void UpdateWeights(BP_PARAMS_PredictiveUpdate) {
  constexpr std::string_view op = "PredictiveCoding.UpdateWeights";
  const int64_t cells = CheckShape(op, dtype, outDim, inDim);
  CheckPointer(op, "weights", weights, cells);
  CheckPointer(op, "representation", representation, inDim);
  CheckPointer(op, "predictionError", predictionError, outDim);
  CheckPointer(op, "output", output, cells);
  const double lr = CheckLearningRate(op, config);
  const std::vector<double> w = Widen<double>(weights, cells, dtype);
  const std::vector<double> s = Widen<double>(representation, inDim, dtype);
  const std::vector<double> e = Widen<double>(predictionError, outDim, dtype);

  std::vector<double> updated(w.size(), 0.0);
  for (int64_t o = 0; o < outDim; ++o) {
    const double step = lr * e[static_cast<size_t>(o)];
    for (int64_t i = 0; i < inDim; ++i) {
      const size_t k = static_cast<size_t>(o * inDim + i);
      updated[k] = w[k] + step * s[static_cast<size_t>(i)];
    }
  }
  Narrow(updated, output, dtype);
}

}  // namespace predictive_coding

void RegisterPredictiveCoding(KernelTable& table) {
  table.PredictiveCoding_Prediction = &predictive_coding::Prediction;
  table.PredictiveCoding_PredictionError = &predictive_coding::PredictionError;
  table.PredictiveCoding_UpdateRepresentation = &predictive_coding::UpdateRepresentation;
  table.PredictiveCoding_UpdateWeights = &predictive_coding::UpdateWeights;
}

}  // namespace backplane::cpu::ref
