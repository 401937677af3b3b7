// Tests of the TensorOps index methods (TopK, ScatterElements, ScatterND, GatherND): the NumPy
// goldens of tests/golden/gen_tensor_ops_index.py on the reference table and through the CPU
// Backend, bit-exact; closed-form special cases (NaN and tie order, wrap-around, duplicate
// indices); and the validation paths, which must name the method and argument and write nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backplane/backend/tensor_ops.hpp"
#include "backplane/convert.hpp"
#include "backplane/cpu/cpu_backend.hpp"
#include "cpu/reference/reference.hpp"
#include "support/test_support.hpp"
#include "tensor_ops_golden.hpp"

namespace backplane {
namespace {

using nlohmann::json;
using test::ThrowsError;

using namespace tensor_ops_golden;  // NOLINT(google-build-using-namespace)

const json& Golden() {
  static const json data = ReadGolden("tensor_ops_index.json");
  return data;
}

std::vector<uint8_t> Guarded(DType dt, int64_t count) {
  return std::vector<uint8_t>(DTypeStorageBytes(dt, count) + 16, 0xA5);
}

ScatterConfig Reduction(const json& c) {
  const std::string r = c.at("reduction").get<std::string>();
  return {r == "add" ? ScatterReduction::Add : r == "mul" ? ScatterReduction::Mul : ScatterReduction::None};
}

TEST(TensorOpsIndexGolden, TopK) {
  int n = 0;
  for (const json& c : Golden().at("cases")) {
    if (c.at("method") != "TopK") continue;
    const DType dt = DTypeOf(c);
    const auto shape = c.at("shape").get<std::vector<int64_t>>();
    const int64_t k = c.at("k").get<int64_t>();
    const auto x = Storage(dt, c.at("x"));
    const auto want = c.at("indices").get<std::vector<int64_t>>();
    const TopKConfig config{c.at("largest").get<bool>()};
    BothKernels([&](bool fast) {
      auto values = Guarded(dt, shape[0] * k * shape[2]);
      std::vector<int64_t> indices(want.size() + 2, -7);
      if (fast) {
        Fast().TopK(config, x.data(), values.data(), indices.data(), shape[0], shape[1], shape[2], k, dt);
      } else {
        Ref().TensorOps_TopK(config, x.data(), values.data(), indices.data(), shape[0], shape[1], shape[2], k, dt);
      }
      EXPECT_TRUE(SameElements(values, dt, c.at("values"))) << c.at("dtype") << " " << c.at("shape") << " k " << k;
      EXPECT_EQ(std::vector<int64_t>(indices.begin(), indices.begin() + static_cast<ptrdiff_t>(want.size())), want);
      EXPECT_EQ(indices[want.size()], -7);
    });
    ++n;
  }
  EXPECT_GE(n, 100);
}

TEST(TensorOpsIndexGolden, ScatterElements) {
  int n = 0;
  for (const json& c : Golden().at("cases")) {
    if (c.at("method") != "ScatterElements") continue;
    const DType dt = DTypeOf(c);
    const auto shape = c.at("shape").get<std::vector<int64_t>>();
    const int64_t updAxis = c.at("upd_axis").get<int64_t>();
    const auto data = Storage(dt, c.at("data"));
    const auto upd = Storage(dt, c.at("updates"));
    const auto idx = c.at("indices").get<std::vector<int64_t>>();
    const ScatterConfig config = Reduction(c);
    BothKernels([&](bool fast) {
      auto out = Guarded(dt, shape[0] * shape[1] * shape[2]);
      if (fast) {
        Fast().ScatterElements(config, data.data(), idx.data(), upd.data(), out.data(), shape[0], shape[1], updAxis,
                               shape[2], dt);
      } else {
        Ref().TensorOps_ScatterElements(config, data.data(), idx.data(), upd.data(), out.data(), shape[0], shape[1],
                                        updAxis, shape[2], dt);
      }
      EXPECT_TRUE(SameElements(out, dt, c.at("want"))) << c.at("dtype") << " " << c.at("shape") << " "
                                                        << c.at("reduction");
    });
    ++n;
  }
  EXPECT_GE(n, 60);
}

int64_t Prod(const std::vector<int64_t>& v, size_t from) {
  int64_t p = 1;
  for (size_t i = from; i < v.size(); ++i) p *= v[i];
  return p;
}

TEST(TensorOpsIndexGolden, ScatterND) {
  int n = 0;
  for (const json& c : Golden().at("cases")) {
    if (c.at("method") != "ScatterND") continue;
    const DType dt = DTypeOf(c);
    const auto dims = c.at("dims").get<std::vector<int64_t>>();
    const int64_t depth = c.at("depth").get<int64_t>(), count = c.at("count").get<int64_t>();
    const auto data = Storage(dt, c.at("data"));
    const auto upd = Storage(dt, c.at("updates"));
    const auto idx = c.at("indices").get<std::vector<int64_t>>();
    const ScatterConfig config = Reduction(c);
    BothKernels([&](bool fast) {
      auto out = Guarded(dt, Prod(dims, 0));
      const auto rank = static_cast<int64_t>(dims.size());
      if (fast) {
        Fast().ScatterND(config, data.data(), idx.data(), upd.data(), out.data(), dims.data(), rank, count, depth, dt);
      } else {
        Ref().TensorOps_ScatterND(config, data.data(), idx.data(), upd.data(), out.data(), dims.data(), rank, count,
                                  depth, dt);
      }
      EXPECT_TRUE(SameElements(out, dt, c.at("want"))) << c.at("dtype") << " " << c.at("dims") << " depth " << depth
                                                        << " " << c.at("reduction");
    });
    ++n;
  }
  EXPECT_GE(n, 50);
}

TEST(TensorOpsIndexGolden, GatherND) {
  int n = 0;
  for (const json& c : Golden().at("cases")) {
    if (c.at("method") != "GatherND") continue;
    const DType dt = DTypeOf(c);
    const auto dims = c.at("dims").get<std::vector<int64_t>>();
    const int64_t batch = c.at("batch").get<int64_t>(), depth = c.at("depth").get<int64_t>(),
                  count = c.at("count").get<int64_t>();
    const auto x = Storage(dt, c.at("x"));
    const auto idx = c.at("indices").get<std::vector<int64_t>>();
    BothKernels([&](bool fast) {
      auto out = Guarded(dt, batch * count * Prod(dims, static_cast<size_t>(depth)));
      const auto rank = static_cast<int64_t>(dims.size());
      if (fast) {
        Fast().GatherND(x.data(), idx.data(), out.data(), dims.data(), rank, batch, count, depth, dt);
      } else {
        Ref().TensorOps_GatherND(x.data(), idx.data(), out.data(), dims.data(), rank, batch, count, depth, dt);
      }
      EXPECT_TRUE(SameElements(out, dt, c.at("want"))) << c.at("dtype") << " " << c.at("dims") << " depth " << depth;
    });
    ++n;
  }
  EXPECT_GE(n, 25);
}

// ---- special cases (closed form) --------------------------------------------------------------------

TEST(TensorOpsIndexSpecial, TopKOrdersNaNAboveEveryNumberAndTiesByIndex) {
  const std::vector<float> x = {1.0f, NAN, 3.0f, 3.0f, -0.0f, 0.0f, NAN};
  for (const bool fast : {false, true}) {
    for (const bool largest : {true, false}) {
      std::vector<float> v(7);
      std::vector<int64_t> i(7);
      const TopKConfig config{largest};
      if (fast) {
        Fast().TopK(config, x.data(), v.data(), i.data(), 1, 7, 1, 7, DType::Float32);
      } else {
        Ref().TensorOps_TopK(config, x.data(), v.data(), i.data(), 1, 7, 1, 7, DType::Float32);
      }
      const std::vector<int64_t> want = largest ? std::vector<int64_t>{1, 6, 2, 3, 0, 4, 5}
                                                : std::vector<int64_t>{4, 5, 0, 2, 3, 1, 6};
      EXPECT_EQ(i, want) << "largest " << largest;
      for (size_t m = 0; m < 7; ++m) {
        const float w = x[static_cast<size_t>(want[m])];
        EXPECT_TRUE((std::isnan(w) && std::isnan(v[m])) || (w == v[m] && std::signbit(w) == std::signbit(v[m])));
      }
    }
  }
}

TEST(TensorOpsIndexSpecial, ScatterAddWrapsIntegersAndAppliesDuplicatesInOrder) {
  const std::vector<int8_t> data = {120, 0, 0};
  const std::vector<int64_t> idx = {0, 0, -1, 2};
  const std::vector<int8_t> upd = {5, 10, 1, 2};
  for (const bool fast : {false, true}) {
    std::vector<int8_t> out(3), set(3);
    if (fast) {
      Fast().ScatterElements({ScatterReduction::Add}, data.data(), idx.data(), upd.data(), out.data(), 1, 3, 4, 1,
                             DType::Int8);
      Fast().ScatterElements({}, data.data(), idx.data(), upd.data(), set.data(), 1, 3, 4, 1, DType::Int8);
    } else {
      Ref().TensorOps_ScatterElements({ScatterReduction::Add}, data.data(), idx.data(), upd.data(), out.data(), 1, 3,
                                      4, 1, DType::Int8);
      Ref().TensorOps_ScatterElements({}, data.data(), idx.data(), upd.data(), set.data(), 1, 3, 4, 1, DType::Int8);
    }
    EXPECT_EQ(out, (std::vector<int8_t>{static_cast<int8_t>(-121), 0, 3}));  // 120 + 15 wraps to -121
    EXPECT_EQ(set, (std::vector<int8_t>{10, 0, 2}));                         // the last write wins
  }
}

// ---- validation --------------------------------------------------------------------------------------

TEST(TensorOpsIndexErrors, EveryIndexIsCheckedBeforeWriting) {
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};
  const std::vector<int64_t> dims = {2, 3};
  for (const bool fast : {false, true}) {
    for (const int64_t bad : {int64_t{3}, int64_t{-4}}) {
      std::vector<float> out(6, 7.0f);
      const std::vector<int64_t> idx = {0, -1, 2, bad};
      auto scatter = [&] {
        if (fast) {
          Fast().ScatterElements({}, x.data(), idx.data(), x.data(), out.data(), 1, 3, 4, 1, DType::Float32);
        } else {
          Ref().TensorOps_ScatterElements({}, x.data(), idx.data(), x.data(), out.data(), 1, 3, 4, 1, DType::Float32);
        }
      };
      EXPECT_TRUE(ThrowsError(scatter, ErrorCode::InvalidArgument,
                              {"TensorOps.ScatterElements", "'indices'", std::to_string(bad), "[-3, 3)"}));
      EXPECT_EQ(out, std::vector<float>(6, 7.0f));
      const std::vector<int64_t> tuples = {1, 2, 0, bad};  // (1, 2), (0, bad)
      auto nd = [&] {
        if (fast) {
          Fast().ScatterND({}, x.data(), tuples.data(), x.data(), out.data(), dims.data(), 2, 2, 2, DType::Float32);
        } else {
          Ref().TensorOps_ScatterND({}, x.data(), tuples.data(), x.data(), out.data(), dims.data(), 2, 2, 2,
                                    DType::Float32);
        }
      };
      EXPECT_TRUE(ThrowsError(nd, ErrorCode::InvalidArgument,
                              {"TensorOps.ScatterND", "'indices'", std::to_string(bad), "[-3, 3)"}));
      EXPECT_EQ(out, std::vector<float>(6, 7.0f));
      auto gather = [&] {
        if (fast) {
          Fast().GatherND(x.data(), tuples.data(), out.data(), dims.data(), 2, 1, 2, 2, DType::Float32);
        } else {
          Ref().TensorOps_GatherND(x.data(), tuples.data(), out.data(), dims.data(), 2, 1, 2, 2, DType::Float32);
        }
      };
      EXPECT_TRUE(ThrowsError(gather, ErrorCode::InvalidArgument,
                              {"TensorOps.GatherND", "'indices'", std::to_string(bad), "[-3, 3)"}));
      EXPECT_EQ(out, std::vector<float>(6, 7.0f));
    }
  }
  std::vector<float> v(4);
  std::vector<int64_t> i(4);
  EXPECT_TRUE(ThrowsError([&] { Fast().TopK({}, x.data(), v.data(), i.data(), 1, 3, 1, 4, DType::Float32); },
                          ErrorCode::InvalidArgument, {"TensorOps.TopK", "'k'", "[0, 3]"}));
  EXPECT_TRUE(ThrowsError([&] { Fast().TopK({}, x.data(), v.data(), i.data(), 1, 3, 1, 2, DType::Bool); },
                          ErrorCode::UnsupportedDType, {"TensorOps.TopK", "'dtype'"}));
  EXPECT_TRUE(ThrowsError(
      [&] {
        Fast().ScatterND({static_cast<ScatterReduction>(9)}, x.data(), i.data(), x.data(), v.data(), dims.data(), 2, 1,
                         1, DType::Float32);
      },
      ErrorCode::InvalidArgument, {"TensorOps.ScatterND", "'config.Reduction'"}));
  EXPECT_TRUE(ThrowsError(
      [&] { Fast().GatherND(x.data(), i.data(), v.data(), dims.data(), 2, 1, 1, 3, DType::Float32); },
      ErrorCode::InvalidArgument, {"TensorOps.GatherND", "'depth'", "[0, 2]"}));
}

}  // namespace
}  // namespace backplane
