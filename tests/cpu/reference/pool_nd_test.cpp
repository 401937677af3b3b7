// Tests of the PoolNd methods (MaxPoolNd, AvgPoolNd): the PyTorch goldens of
// tests/golden/gen_pool_nd.py on the reference table and through the CPU Backend (max: values and
// indices exact in every layout; averages within the tolerance stated below), and the validation
// paths, which must name the method and argument and write nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backplane/backend/backend.hpp"
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
  static const json data = ReadGolden("pool_nd.json");
  return data;
}

PoolNdSurface& FastPool() {
  static const std::unique_ptr<Backend> backend = cpu::CreateBackend();
  return backend->PoolNd();
}

void Call(bool fast, bool isMax, const PoolNdConfig& c, const void* in, void* out, int64_t* idx, int64_t planes,
          DType dt) {
  if (isMax) {
    fast ? FastPool().MaxPoolNd(c, in, out, idx, planes, dt) : Ref().PoolNd_MaxPoolNd(c, in, out, idx, planes, dt);
  } else {
    fast ? FastPool().AvgPoolNd(c, in, out, idx, planes, dt) : Ref().PoolNd_AvgPoolNd(c, in, out, idx, planes, dt);
  }
}

PoolNdConfig ConfigOf(const json& c) {
  PoolNdConfig cfg;
  cfg.Rank = c.at("rank").get<int32_t>();
  cfg.CeilMode = c.at("ceil").get<bool>();
  cfg.CountIncludePad = c.at("include_pad").get<bool>();
  for (int i = 0; i < cfg.Rank; ++i) {
    cfg.In[i] = c.at("in")[i].get<int64_t>();
    cfg.Out[i] = c.at("out")[i].get<int64_t>();
    cfg.Kernel[i] = c.at("kernel")[i].get<int64_t>();
    cfg.Stride[i] = c.at("stride")[i].get<int64_t>();
    cfg.Dilation[i] = c.at("dilation")[i].get<int64_t>();
    cfg.PadBegin[i] = c.at("pad_begin")[i].get<int64_t>();
    cfg.PadEnd[i] = c.at("pad_end")[i].get<int64_t>();
  }
  return cfg;
}

// Average tolerance, relative to |want| (plus the same absolute amount): torch's sums may add in
// another order, so a few f64 ulps, and one ulp of the narrower formats after their single rounding.
double AvgTolerance(DType dt) {
  switch (dt) {
    case DType::Float64: return 1e-15;
    case DType::Float32: return 0x1p-23;
    case DType::Float16: return 0x1p-10;
    default: return 0x1p-7;
  }
}

double ElementAt(const std::vector<uint8_t>& s, DType dt, size_t i) {
  switch (dt) {
    case DType::Float64: { double v; std::memcpy(&v, s.data() + 8 * i, 8); return v; }
    case DType::Float32: { float v; std::memcpy(&v, s.data() + 4 * i, 4); return v; }
    default: {
      uint16_t h;
      std::memcpy(&h, s.data() + 2 * i, 2);
      return dt == DType::Float16 ? F16ToF32(h) : BF16ToF32(h);
    }
  }
}

TEST(PoolNdGolden, MatchesTorch) {
  int checked = 0;
  for (const json& c : Golden().at("cases")) {
    const DType dt = DTypeOf(c);
    const bool isMax = c.at("op") == "max";
    const PoolNdConfig base = ConfigOf(c);
    const int64_t planes = c.at("planes").get<int64_t>();
    const auto count = static_cast<int64_t>(c.at("y").size());
    const int64_t planeIn = static_cast<int64_t>(c.at("x").size()) / planes, planeOut = count / planes;
    const std::vector<uint8_t> x = Storage(dt, c.at("x"));
    for (const bool fast : {false, true}) {
      SCOPED_TRACE(c.at("name").get<std::string>() + (fast ? " (backend)" : " (reference)"));
      if (!isMax) {
        std::vector<uint8_t> y(DTypeStorageBytes(dt, count) + 16, 0xA5);
        Call(fast, false, base, x.data(), y.data(), nullptr, planes, dt);
        for (size_t i = 0; i < static_cast<size_t>(count); ++i) {
          const double want = JsonDouble(c.at("y")[i]), got = ElementAt(y, dt, i);
          EXPECT_NEAR(got, want, AvgTolerance(dt) * (1.0 + std::fabs(want))) << "element " << i;
        }
        for (size_t b = DTypeStorageBytes(dt, count); b < y.size(); ++b) ASSERT_EQ(y[b], 0xA5) << "guard byte";
        ++checked;
        continue;
      }
      // Values with plane indices, tensor indices, column-major indices (2-D), and no indices.
      for (int layout = 0; layout < 4; ++layout) {
        if (layout == 2 && !c.contains("indices_column_major")) continue;
        PoolNdConfig cfg = base;
        cfg.IndicesOverTensor = layout == 1;
        cfg.ColumnMajorIndices = layout == 2;
        std::vector<uint8_t> y(DTypeStorageBytes(dt, count) + 16, 0xA5);
        std::vector<int64_t> idx(static_cast<size_t>(count) + 2, -7);
        Call(fast, true, cfg, x.data(), y.data(), layout == 3 ? nullptr : idx.data(), planes, dt);
        EXPECT_TRUE(SameElements(y, dt, c.at("y"))) << "layout " << layout;
        if (layout == 3) continue;
        const json& want = c.at(layout == 2 ? "indices_column_major" : "indices");
        for (int64_t i = 0; i < count; ++i) {
          const int64_t base_index = layout == 1 ? (i / planeOut) * planeIn : 0;
          ASSERT_EQ(idx[static_cast<size_t>(i)], base_index + want[static_cast<size_t>(i)].get<int64_t>())
              << "layout " << layout << " index " << i;
        }
        EXPECT_EQ(idx[static_cast<size_t>(count)], -7);
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 60);
}

// Closed forms: a max keeps the first of equal values and the last NaN; an average over a window
// half in the padding divides by the in-input taps, or by the padded taps with CountIncludePad.
TEST(PoolNdReference, TiesNaNAndPadding) {
  PoolNdConfig c;
  c.Rank = 1;
  c.In[0] = 6;
  c.Kernel[0] = 3;
  c.Stride[0] = 3;
  c.Out[0] = 2;
  const float x[6] = {2.0f, 5.0f, 5.0f, NAN, 1.0f, NAN};
  float y[2];
  int64_t idx[2];
  for (const bool fast : {false, true}) {
    Call(fast, true, c, x, y, idx, 1, DType::Float32);
    EXPECT_EQ(y[0], 5.0f);
    EXPECT_EQ(idx[0], 1);
    EXPECT_TRUE(std::isnan(y[1]));
    EXPECT_EQ(idx[1], 5);
  }
  PoolNdConfig a;
  a.Rank = 1;
  a.In[0] = 4;
  a.Kernel[0] = 4;
  a.Stride[0] = 4;
  a.PadBegin[0] = 2;
  a.PadEnd[0] = 2;
  a.Out[0] = 2;
  const double v[4] = {1.0, 2.0, 3.0, 5.0};
  double m[2];
  for (const bool fast : {false, true}) {
    a.CountIncludePad = false;
    Call(fast, false, a, v, m, nullptr, 1, DType::Float64);
    EXPECT_EQ(m[0], 1.5);
    EXPECT_EQ(m[1], 4.0);
    a.CountIncludePad = true;
    Call(fast, false, a, v, m, nullptr, 1, DType::Float64);
    EXPECT_EQ(m[0], 0.75);
    EXPECT_EQ(m[1], 2.0);
  }
}

TEST(PoolNdReference, RejectsBadCallsWithoutWriting) {
  PoolNdConfig good;
  good.Rank = 2;
  good.In[0] = good.In[1] = 4;
  good.Kernel[0] = good.Kernel[1] = 2;
  good.Stride[0] = good.Stride[1] = 2;
  good.Out[0] = good.Out[1] = 2;
  std::vector<float> x(16, 1.0f), y(4, 7.0f);
  std::vector<int64_t> idx(4, 0);
  for (const bool fast : {false, true}) {
    auto run = [&](PoolNdConfig c, bool isMax, int64_t* indices = nullptr, DType dt = DType::Float32,
                   const void* in = nullptr) {
      return [=, &x, &y] { Call(fast, isMax, c, in ? in : x.data(), y.data(), indices, 1, dt); };
    };
    PoolNdConfig bad = good;
    bad.Rank = 4;
    EXPECT_TRUE(ThrowsError(run(bad, true), ErrorCode::InvalidArgument, {"PoolNd.MaxPoolNd", "config.Rank"}));
    bad = good;
    bad.Stride[1] = 0;
    EXPECT_TRUE(ThrowsError(run(bad, false), ErrorCode::InvalidArgument, {"PoolNd.AvgPoolNd", "config.Stride[1]"}));
    bad = good;
    bad.Out[0] = 3;
    EXPECT_TRUE(ThrowsError(run(bad, true), ErrorCode::ShapeMismatch, {"config.Out[0]", "2"}));
    bad = good;
    bad.Kernel[0] = 3;
    bad.Dilation[0] = 2;
    bad.Out[0] = 0;
    EXPECT_TRUE(ThrowsError(run(bad, true), ErrorCode::ShapeMismatch, {"config.In[0]"}));
    bad = good;
    bad.PadBegin[1] = 2;
    bad.Out[1] = 3;
    EXPECT_TRUE(ThrowsError(run(bad, true), ErrorCode::InvalidArgument, {"config.PadBegin[1]", "padding"}));
    EXPECT_TRUE(ThrowsError(run(good, false, idx.data()), ErrorCode::InvalidArgument, {"indices"}));
    EXPECT_TRUE(ThrowsError(run(good, false, nullptr, DType::Int32), ErrorCode::UnsupportedDType, {"dtype"}));
    EXPECT_TRUE(ThrowsError(run(good, true, nullptr, DType::Bool), ErrorCode::UnsupportedDType, {"dtype"}));
    for (float v : y) EXPECT_EQ(v, 7.0f);
  }
}

}  // namespace
}  // namespace backplane
