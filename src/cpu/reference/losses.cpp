// Scalar reference kernels for the Losses surface. Every loss is the mean of per-element terms,
// computed and accumulated in f64 from the widened inputs, returned as is for f64 input and
// rounded once to f32 for f32/f16/bf16 input. The mean over an empty set is NaN (as in torch).
// Semantics and the PyTorch function each loss matches: docs/semantics/losses.md.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>

#include "cpu/reference/common.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace losses {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// torch's binary_cross_entropy clamps each log term at -100 so that 0 * log(0) stays finite.
constexpr double kLogFloor = -100.0;

void CheckLoss(std::string_view op, const void* predictions, const void* targets, int64_t count,
               DType dtype) {
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "predictions", predictions, count);
  CheckPointer(op, "targets", targets, count);
}

double Finish(double value, DType dtype) {
  return dtype == DType::Float64 ? value : static_cast<double>(static_cast<float>(value));
}

// mean_i term(p_i, t_i), with the validation done first; NaN for count 0.
template <class Term>
double MeanLoss(std::string_view op, const void* predictions, const void* targets, int64_t count,
                DType dtype, Term term) {
  CheckLoss(op, predictions, targets, count, dtype);
  if (count == 0) return kNaN;
  double total = 0.0;
  for (int64_t i = 0; i < count; ++i) {
    total += term(Load<double>(predictions, i, dtype), Load<double>(targets, i, dtype), i);
  }
  return Finish(total / static_cast<double>(count), dtype);
}

}  // namespace

// torch.nn.functional.mse_loss: mean (p - t)^2.
double MSE(const void* predictions, const void* targets, int64_t count, DType dtype) {
  return MeanLoss("Losses.MSE", predictions, targets, count, dtype,
                  [](double p, double t, int64_t) { return (p - t) * (p - t); });
}

// torch.nn.functional.l1_loss: mean |p - t|.
double MAE(const void* predictions, const void* targets, int64_t count, DType dtype) {
  return MeanLoss("Losses.MAE", predictions, targets, count, dtype,
                  [](double p, double t, int64_t) { return std::fabs(p - t); });
}

// torch.nn.functional.huber_loss with delta = 1: z = |p - t|; z < 1 ? z^2 / 2 : z - 1/2.
double Huber(const void* predictions, const void* targets, int64_t count, DType dtype) {
  constexpr double kDelta = 1.0;
  return MeanLoss("Losses.Huber", predictions, targets, count, dtype,
                  [](double p, double t, int64_t) {
                    const double z = std::fabs(p - t);
                    return z < kDelta ? 0.5 * z * z : kDelta * (z - 0.5 * kDelta);
                  });
}

// torch.nn.functional.binary_cross_entropy on probabilities p in [0, 1]:
// -(t * max(ln p, -100) + (1 - t) * max(ln(1 - p), -100)). A prediction outside [0, 1] or NaN
// throws (torch raises too); targets are taken as given (soft labels allowed, NaN propagates).
double BinaryCrossEntropy(const void* predictions, const void* targets, int64_t count,
                          DType dtype) {
  constexpr std::string_view kOp = "Losses.BinaryCrossEntropy";
  CheckLoss(kOp, predictions, targets, count, dtype);
  for (int64_t i = 0; i < count; ++i) {
    const double p = Load<double>(predictions, i, dtype);
    if (!(p >= 0.0 && p <= 1.0)) {
      ThrowInvalidArgument(kOp, "predictions", "in [0, 1]", fmt::format("{} at index {}", p, i));
    }
  }
  return MeanLoss(kOp, predictions, targets, count, dtype, [](double p, double t, int64_t) {
    const double log_p = std::max(std::log(p), kLogFloor);
    const double log_1mp = std::max(std::log1p(-p), kLogFloor);
    return -(t * log_p + (1.0 - t) * log_1mp);
  });
}

// KL(targets || predictions), both probabilities, elementwise mean of t * ln(t / p) with the xlogy
// convention 0 * ln(0 / p) = 0 (also for p = 0); t > 0 with p = 0 gives +Inf. A negative entry
// throws; NaN propagates. Equals scipy.special.rel_entr(t, p).mean() and
// torch.nn.functional.kl_div(torch.log(p), t, reduction='mean') wherever t > 0 or p > 0.
double KLDivergence(const void* predictions, const void* targets, int64_t count, DType dtype) {
  constexpr std::string_view kOp = "Losses.KLDivergence";
  CheckLoss(kOp, predictions, targets, count, dtype);
  for (int64_t i = 0; i < count; ++i) {
    const double p = Load<double>(predictions, i, dtype);
    const double t = Load<double>(targets, i, dtype);
    if (p < 0.0) {
      ThrowInvalidArgument(kOp, "predictions", ">= 0", fmt::format("{} at index {}", p, i));
    }
    if (t < 0.0) ThrowInvalidArgument(kOp, "targets", ">= 0", fmt::format("{} at index {}", t, i));
  }
  return MeanLoss(kOp, predictions, targets, count, dtype, [](double p, double t, int64_t) {
    if (std::isnan(p) || std::isnan(t)) return kNaN;
    if (t == 0.0) return 0.0;
    return t * (std::log(t) - std::log(p));
  });
}

// torch.nn.functional.cross_entropy (mean over the batch) of logits [batch, classes] against
// int32 class indices: mean_b (logsumexp(z_b) - z_b[t_b]), log-sum-exp shifted by the row maximum
// and evaluated in f64. Every target must lie in [0, classes); batch 0 gives NaN.
double CrossEntropy(const void* logits, const int32_t* targets, int64_t batch, int64_t classes,
                    DType dtype) {
  constexpr std::string_view kOp = "Losses.CrossEntropy";
  CheckDType(kOp, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(kOp, "batch", batch);
  CheckNonNegative(kOp, "classes", classes);
  if (batch > 0 && classes == 0) ThrowInvalidArgument(kOp, "classes", "> 0 when batch > 0", "0");
  int64_t logit_count = 0;
  if (__builtin_mul_overflow(batch, classes, &logit_count)) {
    ThrowInvalidArgument(kOp, "batch*classes", "representable in int64",
                         fmt::format("{} * {} overflows", batch, classes));
  }
  CheckPointer(kOp, "logits", logits, logit_count);
  CheckPointer(kOp, "targets", targets, batch);
  for (int64_t b = 0; b < batch; ++b) {
    if (targets[b] < 0 || targets[b] >= classes) {
      ThrowInvalidArgument(kOp, "targets", fmt::format("in [0, {})", classes),
                           fmt::format("{} at index {}", targets[b], b));
    }
  }
  if (batch == 0) return kNaN;

  double total = 0.0;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t row = b * classes;
    double m = Load<double>(logits, row, dtype);
    for (int64_t c = 1; c < classes; ++c) {
      const double z = Load<double>(logits, row + c, dtype);
      if (std::isnan(z) || z > m) m = z;
    }
    double sum = 0.0;
    for (int64_t c = 0; c < classes; ++c) sum += std::exp(Load<double>(logits, row + c, dtype) - m);
    const double log_sum_exp = m + std::log(sum);
    total += log_sum_exp - Load<double>(logits, row + targets[b], dtype);
  }
  return Finish(total / static_cast<double>(batch), dtype);
}

}  // namespace losses

void RegisterLosses(KernelTable& table) {
  table.Losses_MSE = &losses::MSE;
  table.Losses_MAE = &losses::MAE;
  table.Losses_Huber = &losses::Huber;
  table.Losses_BinaryCrossEntropy = &losses::BinaryCrossEntropy;
  table.Losses_KLDivergence = &losses::KLDivergence;
  table.Losses_CrossEntropy = &losses::CrossEntropy;
}

}  // namespace backplane::cpu::ref
