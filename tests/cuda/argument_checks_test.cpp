// Every CUDA kernel checks its arguments on the host, before any CUDA call, with the CPU
// reference's error code and message. Runs without a GPU: each method is called through its
// kernel-table slot and through the reference backend with the same bad arguments (null pointers
// and sizes of -1, in a dtype the method accepts and in one it does not), and both must throw the
// same error.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <type_traits>

#include "backplane/backend/backend.hpp"
#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/error.hpp"
#include "cuda/kernel_table.hpp"

namespace backplane {
namespace {

// What every argument of one call is set to: pointers are null, configs default-constructed.
struct Fill {
  DType dtype = DType::Float32;
  int64_t size = -1;  // every signed integer
  double real = 1.0;  // every float and double
};

template <class T, class U = std::remove_cvref_t<T>>
U BadArgument(const Fill& fill) {
  if constexpr (std::is_pointer_v<U>) {
    return nullptr;
  } else if constexpr (std::is_same_v<U, DType>) {
    return fill.dtype;
  } else if constexpr (std::is_same_v<U, bool>) {
    return false;
  } else if constexpr (std::is_floating_point_v<U>) {
    return static_cast<U>(fill.real);
  } else if constexpr (std::is_integral_v<U> && std::is_signed_v<U>) {
    return static_cast<U>(fill.size);
  } else {
    return U{};
  }
}

struct Outcome {
  bool threw = false;
  ErrorCode code = ErrorCode::Internal;
  std::string message;
};

template <class Fn>
Outcome Run(Fn&& fn) {
  Outcome o;
  try {
    fn();
  } catch (const Error& e) {
    o.threw = true;
    o.code = e.code();
    o.message = e.what();
  } catch (const std::exception& e) {
    o.threw = true;
    o.message = std::string("non-backplane exception: ") + e.what();
  }
  return o;
}

template <class R, class... Args>
std::tuple<std::remove_cvref_t<Args>...> BadArguments(R (*)(Args...), const Fill& fill) {
  return {BadArgument<Args>(fill)...};
}

struct Checked {
  int compared = 0;
  int reference_accepted = 0;
};

template <class Slot, class Method, class Surface>
void Compare(const char* name, Slot kernel, Method method, Surface& surface, const Fill& fill,
             Checked& checked) {
  ASSERT_NE(kernel, nullptr) << name << " has no CUDA kernel";
  auto args = BadArguments(kernel, fill);
  const Outcome want = Run([&] { std::apply([&](auto&... a) { (void)(surface.*method)(a...); }, args); });
  if (!want.threw) {
    ++checked.reference_accepted;  // nothing to compare: the reference accepts these arguments
    return;
  }
  const Outcome got = Run([&] { std::apply([&](auto&... a) { (void)kernel(a...); }, args); });
  ++checked.compared;
  EXPECT_TRUE(got.threw) << name << " (" << DTypeName(fill.dtype) << "): the CUDA kernel accepted what the reference rejects: "
                         << want.message;
  EXPECT_EQ(got.code, want.code) << name << " (" << DTypeName(fill.dtype) << "): " << got.message;
  EXPECT_EQ(got.message, want.message) << name << " (" << DTypeName(fill.dtype) << ")";
}

void CompareAll(const Fill& fill, Checked& checked) {
  const cuda::KernelTable& table = cuda::Table();
  const auto reference = cpu::CreateReferenceBackend();
#define BP_CHECK_METHOD(S, M, F, D) \
  Compare(#S "." #M, table.S##_##M, &S##Surface::M, reference->S(), fill, checked);
  BP_ALL_METHODS(BP_CHECK_METHOD)
#undef BP_CHECK_METHOD
}

// Negative sizes: the first size check.
TEST(CudaArgumentChecks, NegativeSizes) {
  Checked checked;
  CompareAll(Fill{DType::Float32, -1, 1.0}, checked);
  EXPECT_GT(checked.compared, 200);
}

// A dtype no method accepts.
TEST(CudaArgumentChecks, RejectedDType) {
  Checked checked;
  CompareAll(Fill{DType::Complex128, 1, 1.0}, checked);
  EXPECT_GT(checked.compared, 200);
}

// Sizes of 1 with null pointers: the pointer checks, after the size checks have passed.
TEST(CudaArgumentChecks, NullPointers) {
  for (const DType dtype : {DType::Float64, DType::Float32, DType::Float16, DType::BFloat16}) {
    Checked checked;
    CompareAll(Fill{dtype, 1, 1.0}, checked);
    EXPECT_GT(checked.compared, 150) << DTypeName(dtype);
  }
}

// Sizes of 1 and NaN parameters (rates, eps, temperatures).
TEST(CudaArgumentChecks, NaNParameters) {
  Checked checked;
  CompareAll(Fill{DType::Float32, 1, std::nan("")}, checked);
  EXPECT_GT(checked.compared, 150);
}

}  // namespace
}  // namespace backplane
