// Every method of the CPU backend either has a kernel or throws NotImplemented: nothing may
// silently succeed.
#include <gtest/gtest.h>

#include <type_traits>

#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/error.hpp"

namespace backplane {
namespace {

// Calls a surface method with value-initialised arguments (null pointers, zero counts,
// DType::Invalid, default configs).
template <class Surface, class R, class... Args>
void CallWithDefaults(Surface& surface, R (Surface::*method)(Args...)) {
  (void)(surface.*method)(std::remove_cvref_t<Args>{}...);
}

TEST(CpuDispatch, UnimplementedMethodsThrowNotImplemented) {
  auto backend = cpu::CreateBackend();
  EXPECT_EQ(backend->device(), "cpu");
  int checked = 0;
#define BP_CHECK_METHOD(S, M, F, D)                                                     \
  if (!cpu::Implements(catalog::MethodId::S##_##M)) {                                   \
    ++checked;                                                                          \
    try {                                                                               \
      CallWithDefaults<S##Surface>(backend->S(), &S##Surface::M);                       \
      ADD_FAILURE() << #S "." #M " returned without a kernel";                           \
    } catch (const Error& e) {                                                          \
      EXPECT_EQ(e.code(), ErrorCode::NotImplemented) << e.what();                       \
      EXPECT_EQ(e.op(), #S "." #M);                                                     \
      EXPECT_NE(std::string(e.what()).find("not implemented on cpu"), std::string::npos); \
    }                                                                                   \
  }
  BP_ALL_METHODS(BP_CHECK_METHOD)
#undef BP_CHECK_METHOD
  RecordProperty("unimplemented_methods", checked);
}

}  // namespace
}  // namespace backplane
