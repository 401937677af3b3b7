// Scalar reference kernels for the Gradients surface: the exact derivatives of the mean losses
// Losses.MSE, MAE, Huber, BinaryCrossEntropy, KLDivergence and CrossEntropy with respect to their
// first argument.
//
// Semantics: docs/semantics/gradients.md. Every kernel validates all of its arguments before it
// writes anything, evaluates in f64 for every storage format (as the losses do) and rounds each
// gradient element once on store. The output is overwritten.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstdint>
#include <string_view>
#include <vector>

#include "cpu/reference/common.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace gradients {

// d/dp_i of mean_j (p_j - t_j)^2: grad_i = 2 (p_i - t_i) / count
// (torch.autograd of torch.nn.functional.mse_loss with reduction='mean').
void MSEGrad(const void* predictions, const void* targets, void* grad, int64_t count, DType dtype) {
  constexpr std::string_view kOp = "Gradients.MSEGrad";
  CheckDType(kOp, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(kOp, "count", count);
  CheckPointer(kOp, "predictions", predictions, count);
  CheckPointer(kOp, "targets", targets, count);
  CheckPointer(kOp, "grad", grad, count);
  const double n = static_cast<double>(count);
  for (int64_t i = 0; i < count; ++i) {
    const double diff = Load<double>(predictions, i, dtype) - Load<double>(targets, i, dtype);
    Store<double>(grad, i, dtype, 2.0 * diff / n);
  }
}

namespace {

void CheckGrad(std::string_view op, const void* predictions, const void* targets, const void* grad,
               int64_t count, DType dtype) {
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "predictions", predictions, count);
  CheckPointer(op, "targets", targets, count);
  CheckPointer(op, "grad", grad, count);
}

// grad_i = term(p_i, t_i) / count, each rounded once on store.
template <class Term>
void Elementwise(const void* predictions, const void* targets, void* grad, int64_t count,
                 DType dtype, Term term) {
  const double n = static_cast<double>(count);
  for (int64_t i = 0; i < count; ++i) {
    const double v = term(Load<double>(predictions, i, dtype), Load<double>(targets, i, dtype));
    Store<double>(grad, i, dtype, v / n);
  }
}

}  // namespace

// d/dp_i of mean_j |p_j - t_j|: sign(p_i - t_i) / count, sign(0) = 0, NaN propagates
// (torch.autograd of l1_loss).
void MAEGrad(const void* predictions, const void* targets, void* grad, int64_t count, DType dtype) {
  CheckGrad("Gradients.MAEGrad", predictions, targets, grad, count, dtype);
  Elementwise(predictions, targets, grad, count, dtype, [](double p, double t) {
    const double d = p - t;
    return d > 0.0 ? 1.0 : d < 0.0 ? -1.0 : (std::isnan(d) ? d : 0.0);
  });
}

// d/dp_i of the mean Huber loss (delta 1): clamp(p_i - t_i, -1, 1) / count, NaN propagates
// (torch.autograd of huber_loss).
void HuberGrad(const void* predictions, const void* targets, void* grad, int64_t count,
               DType dtype) {
  CheckGrad("Gradients.HuberGrad", predictions, targets, grad, count, dtype);
  Elementwise(predictions, targets, grad, count, dtype, [](double p, double t) {
    const double d = p - t;
    return d > 1.0 ? 1.0 : d < -1.0 ? -1.0 : d;
  });
}

// d/dp_i of the mean binary cross-entropy: (p - t) / max(p (1 - p), eps) / count with
// eps = float(1e-12), torch's binary_cross_entropy_backward (its EPSILON, a float, keeps p = 0
// or 1 finite). Predictions must lie in [0, 1] (not NaN), as for Losses.BinaryCrossEntropy;
// targets are taken as given.
void BinaryCrossEntropyGrad(const void* predictions, const void* targets, void* grad,
                            int64_t count, DType dtype) {
  constexpr std::string_view kOp = "Gradients.BinaryCrossEntropyGrad";
  CheckGrad(kOp, predictions, targets, grad, count, dtype);
  for (int64_t i = 0; i < count; ++i) {
    const double p = Load<double>(predictions, i, dtype);
    if (!(p >= 0.0 && p <= 1.0)) {
      ThrowInvalidArgument(kOp, "predictions", "in [0, 1]", fmt::format("{} at index {}", p, i));
    }
  }
  Elementwise(predictions, targets, grad, count, dtype, [](double p, double t) {
    return (p - t) / std::max((1.0 - p) * p, double{1e-12f});
  });
}

// d/dp_i of mean_j t_j ln(t_j / p_j) (Losses.KLDivergence): -t_i / p_i / count, 0 where t_i = 0
// (the xlogy convention, also for p_i = 0), -Inf where t_i > 0 = p_i, NaN if either is NaN.
// Negative entries throw. torch.autograd of kl_div(log(p), t, 'mean') through log(p) gives the
// same wherever t > 0.
void KLDivergenceGrad(const void* predictions, const void* targets, void* grad, int64_t count,
                      DType dtype) {
  constexpr std::string_view kOp = "Gradients.KLDivergenceGrad";
  CheckGrad(kOp, predictions, targets, grad, count, dtype);
  for (int64_t i = 0; i < count; ++i) {
    const double p = Load<double>(predictions, i, dtype);
    const double t = Load<double>(targets, i, dtype);
    if (p < 0.0) {
      ThrowInvalidArgument(kOp, "predictions", ">= 0", fmt::format("{} at index {}", p, i));
    }
    if (t < 0.0) ThrowInvalidArgument(kOp, "targets", ">= 0", fmt::format("{} at index {}", t, i));
  }
  Elementwise(predictions, targets, grad, count, dtype, [](double p, double t) {
    if (std::isnan(p) || std::isnan(t)) return std::numeric_limits<double>::quiet_NaN();
    if (t == 0.0) return 0.0;
    return -t / p;
  });
}

// d/dz_{b,c} of (1/B) sum_b (logsumexp(z_b) - z_b[t_b]):
//   grad_{b,c} = (softmax(z_b)_c - [c == t_b]) / B
// (torch.autograd of torch.nn.functional.cross_entropy with reduction='mean'). The softmax is
// shifted by the row maximum and evaluated in f64. Targets are int32 class indices in
// [0, classes), the format of Losses.CrossEntropy.
void CrossEntropyGrad(const void* logits, const int32_t* targets, void* grad, int64_t batch,
                      int64_t classes, DType dtype) {
  constexpr std::string_view kOp = "Gradients.CrossEntropyGrad";
  CheckDType(kOp, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(kOp, "batch", batch);
  CheckNonNegative(kOp, "classes", classes);
  if (batch > 0 && classes == 0) ThrowInvalidArgument(kOp, "classes", "> 0 when batch > 0", "0");
  int64_t total = 0;
  if (__builtin_mul_overflow(batch, classes, &total)) {
    ThrowInvalidArgument(kOp, "batch*classes", "representable in int64",
                         fmt::format("{} * {} overflows", batch, classes));
  }
  CheckPointer(kOp, "logits", logits, total);
  CheckPointer(kOp, "targets", targets, batch);
  CheckPointer(kOp, "grad", grad, total);
  for (int64_t b = 0; b < batch; ++b) {
    if (targets[b] < 0 || targets[b] >= classes) {
      ThrowInvalidArgument(kOp, "targets", fmt::format("in [0, {})", classes),
                           fmt::format("{} at index {}", targets[b], b));
    }
  }

  const double inv_batch = 1.0 / static_cast<double>(batch);
  std::vector<double> e(static_cast<size_t>(classes));
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t row = b * classes;
    // Row maximum; a NaN becomes the maximum so that it propagates to the whole row.
    double m = Load<double>(logits, row, dtype);
    for (int64_t c = 1; c < classes; ++c) {
      const double z = Load<double>(logits, row + c, dtype);
      if (std::isnan(z) || z > m) m = z;
    }
    double sum = 0.0;
    for (int64_t c = 0; c < classes; ++c) {
      e[static_cast<size_t>(c)] = std::exp(Load<double>(logits, row + c, dtype) - m);
      sum += e[static_cast<size_t>(c)];
    }
    for (int64_t c = 0; c < classes; ++c) {
      const double p = e[static_cast<size_t>(c)] / sum;
      const double onehot = c == targets[b] ? 1.0 : 0.0;
      Store<double>(grad, row + c, dtype, (p - onehot) * inv_batch);
    }
  }
}

}  // namespace gradients

void RegisterGradients(KernelTable& table) {
  table.Gradients_MSEGrad = &gradients::MSEGrad;
  table.Gradients_MAEGrad = &gradients::MAEGrad;
  table.Gradients_HuberGrad = &gradients::HuberGrad;
  table.Gradients_BinaryCrossEntropyGrad = &gradients::BinaryCrossEntropyGrad;
  table.Gradients_KLDivergenceGrad = &gradients::KLDivergenceGrad;
  table.Gradients_CrossEntropyGrad = &gradients::CrossEntropyGrad;
}

}  // namespace backplane::cpu::ref
