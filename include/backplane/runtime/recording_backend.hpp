// A Backend that forwards every call to another one and records which methods were called: how
// the dispatch audit learns which Backend methods an op's lowering really reaches.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "backplane/backend/backend.hpp"
#include "backplane/catalog/catalog.hpp"

namespace backplane::runtime {

class RecordingBackend final : public Backend {
 public:
  explicit RecordingBackend(Backend& inner);
  ~RecordingBackend() override;
  RecordingBackend(const RecordingBackend&) = delete;
  RecordingBackend& operator=(const RecordingBackend&) = delete;

  std::string_view device() const override;
#define BP_RECORDING_ACCESSOR(S, LIST) S##Surface& S() override;
  BP_SURFACES(BP_RECORDING_ACCESSOR)
#undef BP_RECORDING_ACCESSOR

  // The methods called since construction or the last Clear(), in catalog order.
  std::vector<catalog::MethodId> Called() const;
  void Clear();
  // Thread-safe; called by the forwarding surfaces.
  void Record(catalog::MethodId id);

 private:
  struct Surfaces;
  Backend& inner_;
  std::array<std::atomic<uint64_t>, (catalog::kMethodCount + 63) / 64> called_{};
  std::unique_ptr<Surfaces> surfaces_;
};

}  // namespace backplane::runtime
