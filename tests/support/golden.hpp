// Reading the committed golden files (tests/golden/data/*.json, written by tests/golden/gen_*.py).
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/test_support.hpp"

namespace backplane::test {

inline nlohmann::json LoadGolden(const std::string& file) {
  std::ifstream in(GoldenPath(file));
  if (!in) ADD_FAILURE() << "missing golden file " << file;
  return nlohmann::json::parse(in);
}

// The "dtype" field of a golden case.
inline DType DTypeOf(const nlohmann::json& c) {
  const auto dtype = DTypeFromName(c.at("dtype").get<std::string>());
  if (!dtype) ADD_FAILURE() << "bad dtype in golden file";
  return dtype.value_or(DType::Float64);
}

// A golden value list as a buffer of `dtype`.
inline Buffer Input(DType dtype, const nlohmann::json& values) {
  return FromDoubles(dtype, values.get<std::vector<double>>());
}

// An output buffer filled with a recognisable pattern, so unwritten elements show.
inline Buffer Poisoned(DType dtype, int64_t count) {
  Buffer b(dtype, count);
  b.Poison();
  return b;
}

}  // namespace backplane::test
