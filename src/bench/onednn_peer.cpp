// oneDNN's sgemm as a peer in `backplane bench`, loaded at run time (dlopen of Debian's libdnnl2,
// no link dependency and no headers): dnnl_sgemm is row-major C = alpha op(A) op(B) + beta C.
#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdint>

#include "backplane/error.hpp"
#include "bench/bench_data.hpp"

namespace backplane::bench {
namespace {

using SgemmFn = int (*)(char transa, char transb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                        int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

SgemmFn LoadSgemm() {
  static const SgemmFn fn = [] {
    void* lib = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
    return lib == nullptr ? nullptr : reinterpret_cast<SgemmFn>(dlsym(lib, "dnnl_sgemm"));
  }();
  return fn;
}

}  // namespace

std::optional<Workload> OneDnnSgemm(int64_t n) {
  const SgemmFn sgemm = LoadSgemm();
  if (sgemm == nullptr) return std::nullopt;
  return Workload{"peer.onednn_sgemm", "peer", fmt::format("{0}x{0}x{0}", n), 12.0 * n * n, 2.0 * n * n * n, "fma",
                  [n, sgemm](Backend&) {
                    auto a = Random(n * n, 1), c = Random(n * n, 2);
                    auto y = std::make_shared<std::vector<float>>(static_cast<size_t>(n * n));
                    return std::function<void()>([n, sgemm, a, c, y] {
                      WithBackplaneThreads([&] {
                        if (sgemm('N', 'N', n, n, n, 1.0f, a->data(), n, c->data(), n, 0.0f, y->data(), n) != 0) {
                          throw Error(ErrorCode::Internal, "peer.onednn_sgemm", "dnnl_sgemm failed");
                        }
                      });
                    });
                  }};
}

}  // namespace backplane::bench
