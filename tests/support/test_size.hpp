// BACKPLANE_TEST_SIZE=lean (set by make asan / make tsan): the few tests that take minutes under a
// sanitizer run a smaller case of the same check. Unset or "full": the full size.
#pragma once

#include <cstdlib>
#include <string_view>

namespace backplane::test {

inline bool LeanTestSize() {
  const char* size = std::getenv("BACKPLANE_TEST_SIZE");
  return size != nullptr && std::string_view(size) == "lean";
}

}  // namespace backplane::test
