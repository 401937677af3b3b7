#include "backplane/runtime/recording_backend.hpp"

namespace backplane::runtime {
namespace {

#define BP_RECORDING_OVERRIDE(S, M, F, D)                  \
  BP_RET_##F M(BP_PARAMS_##F) override {                   \
    recorder_.Record(catalog::MethodId::S##_##M);          \
    return inner_.M(BP_ARGS_##F);                          \
  }

#define BP_RECORDING_SURFACE(S, LIST)                                                        \
  class Recording##S final : public S##Surface {                                             \
   public:                                                                                   \
    Recording##S(RecordingBackend& recorder, S##Surface& inner) : recorder_(recorder), inner_(inner) {} \
    LIST(BP_RECORDING_OVERRIDE)                                                              \
                                                                                             \
   private:                                                                                  \
    RecordingBackend& recorder_;                                                             \
    S##Surface& inner_;                                                                      \
  };
BP_SURFACES(BP_RECORDING_SURFACE)
#undef BP_RECORDING_SURFACE
#undef BP_RECORDING_OVERRIDE

}  // namespace

struct RecordingBackend::Surfaces {
  Surfaces(RecordingBackend& recorder, Backend& inner)
      :
#define BP_RECORDING_MEMBER_INIT(S, LIST) S##_(recorder, inner.S()),
        BP_SURFACES(BP_RECORDING_MEMBER_INIT)
#undef BP_RECORDING_MEMBER_INIT
        unused(0) {
  }
#define BP_RECORDING_MEMBER(S, LIST) Recording##S S##_;
  BP_SURFACES(BP_RECORDING_MEMBER)
#undef BP_RECORDING_MEMBER
  int unused;
};

RecordingBackend::RecordingBackend(Backend& inner)
    : inner_(inner), surfaces_(std::make_unique<Surfaces>(*this, inner)) {}

RecordingBackend::~RecordingBackend() = default;

std::string_view RecordingBackend::device() const { return inner_.device(); }

#define BP_RECORDING_ACCESSOR(S, LIST) \
  S##Surface& RecordingBackend::S() { return surfaces_->S##_; }
BP_SURFACES(BP_RECORDING_ACCESSOR)
#undef BP_RECORDING_ACCESSOR

void RecordingBackend::Record(catalog::MethodId id) {
  const auto index = static_cast<size_t>(id);
  called_[index / 64].fetch_or(uint64_t{1} << (index % 64), std::memory_order_relaxed);
}

std::vector<catalog::MethodId> RecordingBackend::Called() const {
  std::vector<catalog::MethodId> ids;
  for (int i = 0; i < catalog::kMethodCount; ++i) {
    if (called_[i / 64].load(std::memory_order_relaxed) >> (i % 64) & 1) ids.push_back(static_cast<catalog::MethodId>(i));
  }
  return ids;
}

void RecordingBackend::Clear() {
  for (auto& word : called_) word.store(0, std::memory_order_relaxed);
}

}  // namespace backplane::runtime
