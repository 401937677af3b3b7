#include "backplane/cpu/cpu_backend.hpp"

#include "backplane/cpu/conv_path.hpp"
#include "backplane/cpu/gemm_path.hpp"
#include "backplane/cpu/targets.hpp"
#include "backplane/error.hpp"
#include "cpu/kernel_table.hpp"
#include "cpu/kernels/simd.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu {
namespace {

#define BP_CPU_OVERRIDE(S, M, F, D)                                \
  BP_RET_##F M(BP_PARAMS_##F) override {                           \
    const auto kernel = table_->S##_##M;                           \
    if (kernel == nullptr) ThrowNotImplemented(#S "." #M, "cpu");  \
    return kernel(BP_ARGS_##F);                                    \
  }

#define BP_CPU_SURFACE(S, LIST)                                          \
  class Cpu##S final : public S##Surface {                               \
   public:                                                               \
    explicit Cpu##S(const KernelTable* table) : table_(table) {}         \
    LIST(BP_CPU_OVERRIDE)                                                \
                                                                         \
   private:                                                              \
    const KernelTable* table_;                                           \
  };
BP_SURFACES(BP_CPU_SURFACE)
#undef BP_CPU_SURFACE
#undef BP_CPU_OVERRIDE

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const KernelTable* table)
      :
#define BP_CPU_MEMBER_INIT(S, LIST) S##_(table),
        BP_SURFACES(BP_CPU_MEMBER_INIT)
#undef BP_CPU_MEMBER_INIT
        table_(table) {
  }

  std::string_view device() const override { return "cpu"; }

#define BP_CPU_ACCESSOR(S, LIST) \
  S##Surface& S() override { return S##_; }
  BP_SURFACES(BP_CPU_ACCESSOR)
#undef BP_CPU_ACCESSOR

 private:
#define BP_CPU_MEMBER(S, LIST) Cpu##S S##_;
  BP_SURFACES(BP_CPU_MEMBER)
#undef BP_CPU_MEMBER
  const KernelTable* table_;
};

// Fast kernels where a surface has them, the reference elsewhere.
const KernelTable& MergedTable() {
  static const KernelTable table = [] {
    KernelTable t = ref::Table();
    const KernelTable& fast = simd::Table();
#define BP_MERGE_SLOT(S, M, F, D) \
  if (fast.S##_##M != nullptr) t.S##_##M = fast.S##_##M;
    BP_ALL_METHODS(BP_MERGE_SLOT)
#undef BP_MERGE_SLOT
    return t;
  }();
  return table;
}

}  // namespace

std::unique_ptr<Backend> CreateBackend() {
  ApplyTargetFromEnvironment();
  (void)CurrentGemmPath();  // a bad BACKPLANE_GEMM fails here, never inside a kernel's threads
  (void)CurrentConvPath();  // and a bad BACKPLANE_CONV
  return std::make_unique<CpuBackend>(&MergedTable());
}

std::unique_ptr<Backend> CreateReferenceBackend() { return std::make_unique<CpuBackend>(&ref::Table()); }

bool Implements(catalog::MethodId id) { return ref::Table().Has(id) || simd::Table().Has(id); }

bool HasFastKernel(catalog::MethodId id) { return simd::Table().Has(id); }

std::string ScalarByDesignReason(catalog::MethodId id) {
  if (HasFastKernel(id)) return "";
  const auto& reasons = simd::Table().scalar_by_design;
  const auto it = reasons.find(id);
  return it == reasons.end() ? "" : it->second;
}

}  // namespace backplane::cpu
