// Where the tests find the model files scripts/fetch-models.sh caches (BACKPLANE_CACHE, default
// ~/.cache/backplane). A missing model is a test failure, not a skip: `make test` fetches it.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace backplane::test {

inline std::string CacheDir() {
  if (const char* cache = std::getenv("BACKPLANE_CACHE"); cache != nullptr && *cache != '\0') return cache;
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : ".") + "/.cache/backplane";
}

inline std::string SmolLM2Path() { return CacheDir() + "/models/SmolLM2-135M-Instruct.Q4_1.gguf"; }
inline std::string MiniLMDir() { return CacheDir() + "/models/all-MiniLM-L6-v2"; }

// Use as ASSERT_TRUE(ModelPresent(path)) << ...; the message says how to fetch it.
inline bool ModelPresent(const std::string& path) { return std::filesystem::exists(path); }
inline std::string FetchHint(const std::string& path) {
  return path + " is missing: run scripts/fetch-models.sh (make test does)";
}

}  // namespace backplane::test
