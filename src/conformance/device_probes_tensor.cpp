// Device conformance probes: tensor ops (comparisons, logic, where, cast, integer math, axis and
// index ops).
#include <fmt/format.h>

#include <cmath>

#include "conformance/device_probes.hpp"

namespace backplane::conformance {
namespace {

const std::vector<DType> kFloats = {DType::Float64, DType::Float32, DType::Float16, DType::BFloat16};
const std::vector<DType> kSigned = {DType::Int64, DType::Int32, DType::Int16, DType::Int8};
const std::vector<DType> kUnsigned = {DType::Uint64, DType::Uint32, DType::Uint16, DType::Uint8};

std::vector<DType> Concat(std::initializer_list<std::vector<DType>> parts) {
  std::vector<DType> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// The full value range of an integer dtype (64-bit: what a double holds comfortably).
std::pair<double, double> IntRange(DType d) {
  switch (d) {
    case DType::Int64: return {-9.2e18, 9.2e18};
    case DType::Int32: return {-2147483648.0, 2147483647.0};
    case DType::Int16: return {-32768, 32767};
    case DType::Int8: return {-128, 127};
    case DType::Uint64: return {0, 1.8e19};
    case DType::Uint32: return {0, 4294967295.0};
    case DType::Uint16: return {0, 65535};
    case DType::Uint8: return {0, 255};
    default: return {0, 1};
  }
}

void AddElementwise(std::vector<DeviceProbe>& p) {
  for (const char* op : {"tensor.equal", "tensor.not_equal", "tensor.less", "tensor.less_equal", "tensor.greater",
                         "tensor.greater_equal"}) {
    p.push_back({.op = op, .inputs = {{"T", {4, 6}}, {"T", {4, 6}}}});                // ties in the integers
    p.push_back({.op = op, .inputs = {{"T", {3, 1, 5}}, {"T", {4, 1}}}});            // broadcast both ways
    p.push_back({.op = op, .inputs = {{"T", {2, 3}}, {"T", {}}}, .dtypes = kFloats});  // against a scalar
    for (DType d : Concat({kSigned, kUnsigned})) {  // full range: sign and unsigned compares
      const auto [lo, hi] = IntRange(d);
      p.push_back({.op = op, .inputs = {{"T", {5, 7}, lo, hi}, {"T", {5, 7}, lo, hi}}, .dtypes = {d}});
    }
  }
  for (const char* op : {"tensor.logical_and", "tensor.logical_or", "tensor.logical_xor"}) {
    p.push_back({.op = op, .inputs = {{"T", {4, 6}}, {"T", {4, 6}}}});
    p.push_back({.op = op, .inputs = {{"T", {3, 1, 5}}, {"T", {4, 1}}}});
  }
  p.push_back({.op = "tensor.logical_not", .inputs = {{"T", {5, 7}}}});
  p.push_back({.op = "tensor.where", .inputs = {{"bool", {4, 6}}, {"T", {4, 6}}, {"T", {4, 6}}}});
  p.push_back({.op = "tensor.where", .inputs = {{"bool", {4, 1}}, {"T", {6}}, {"T", {3, 1, 1}}}});
  p.push_back({.op = "tensor.where", .inputs = {{"bool", {}}, {"T", {2, 3}}, {"T", {2, 3}}}});

  // tensor.cast: every source to every target, over ranges that hit truncation, saturation (and
  // Inf in f16), wrap-around and the rounding of wide integers into narrow floats.
  const char* targets[] = {"f64", "f32", "f16", "bf16", "i64", "i32", "i16", "i8", "u64", "u32", "u16", "u8", "bool"};
  for (const char* to : targets) {
    const std::string attrs = fmt::format(R"({{"to": "{}"}})", to);
    for (double r : {3.7, 300.0, 7e4, 5e9, 3e19}) {
      p.push_back({.op = "tensor.cast", .inputs = {{"T", {6, 7}, -r, r}}, .attrs = attrs, .dtypes = kFloats});
    }
    for (DType d : Concat({kSigned, kUnsigned})) {
      const auto [lo, hi] = IntRange(d);
      p.push_back({.op = "tensor.cast", .inputs = {{"T", {6, 7}, lo, hi}}, .attrs = attrs, .dtypes = {d}});
      p.push_back({.op = "tensor.cast", .inputs = {{"T", {2, 5}, lo == 0 ? 0.0 : -3.0, 3}}, .attrs = attrs, .dtypes = {d}});
    }
    p.push_back({.op = "tensor.cast", .inputs = {{"T", {3, 5}}}, .attrs = attrs, .dtypes = {DType::Bool}});
  }

  p.push_back({.op = "tensor.pow", .inputs = {{"T", {4, 6}}, {"T", {4, 6}}}});  // negative bases: NaN
  p.push_back({.op = "tensor.pow", .inputs = {{"T", {5, 7}, 0, 3}, {"T", {5, 7}, -4, 4}}});
  p.push_back({.op = "tensor.pow", .inputs = {{"T", {3, 4}, 0.5, 2}, {"T", {4}, -2, 2}}});

  // tensor.mod: floor (Python) and truncated (C fmod) remainders; integer divisors never 0.
  for (const char* attrs : {R"({"fmod": false})", R"({"fmod": true})"}) {
    p.push_back({.op = "tensor.mod", .inputs = {{"T", {5, 7}, -10, 10}, {"T", {5, 7}, -3, 3}}, .attrs = attrs,
                 .dtypes = kFloats});
    p.push_back({.op = "tensor.mod", .inputs = {{"T", {4, 6}, -10, 10}, {"T", {6}, 0.5, 4}}, .attrs = attrs,
                 .dtypes = kFloats});
    p.push_back({.op = "tensor.mod", .inputs = {{"T", {5, 7}, -100, 100}, {"T", {5, 7}, 1, 7}}, .attrs = attrs,
                 .dtypes = kSigned});
    p.push_back({.op = "tensor.mod", .inputs = {{"T", {5, 7}, -100, 100}, {"T", {5, 7}, -7, -1}}, .attrs = attrs,
                 .dtypes = kSigned});
    p.push_back({.op = "tensor.mod", .inputs = {{"T", {5, 7}, 0, 250}, {"T", {5, 7}, 1, 9}}, .attrs = attrs,
                 .dtypes = kUnsigned});
    for (DType d : Concat({kSigned, kUnsigned})) {
      const auto [lo, hi] = IntRange(d);
      p.push_back({.op = "tensor.mod", .inputs = {{"T", {4, 6}, lo, hi}, {"T", {4, 6}, 1, hi}}, .attrs = attrs,
                   .dtypes = {d}});
    }
  }

  for (const char* op : {"tensor.floor", "tensor.ceil", "tensor.round", "tensor.trunc"}) {
    p.push_back({.op = op, .inputs = {{"T", {16, 33}, -4, 4}}});  // halves show up in f16/bf16
    p.push_back({.op = op, .inputs = {{"T", {5, 7}, -3e5, 3e5}}});
  }

  // Shifts: full-range values, amounts from 0 to past the bit width.
  for (const char* op : {"tensor.bitshift_left", "tensor.bitshift_right"}) {
    for (DType d : Concat({kSigned, kUnsigned})) {
      const auto [lo, hi] = IntRange(d);
      const double bits = static_cast<double>(DTypeBits(d));
      p.push_back({.op = op, .inputs = {{"T", {6, 9}, lo, hi}, {"T", {6, 9}, 0, bits + 3}}, .dtypes = {d}});
      p.push_back({.op = op, .inputs = {{"T", {4, 6}, lo == 0 ? 0.0 : -5.0, 5}, {"T", {6}, 0, 4}}, .dtypes = {d}});
    }
  }
}

void AddAxis(std::vector<DeviceProbe>& p) {
  for (const char* op : {"tensor.argmax", "tensor.argmin"}) {
    for (const char* attrs :
         {R"({})", R"({"axis": 1})", R"({"axis": -1, "keepdims": false})", R"({"axis": 0, "select_last_index": true})",
          R"({"axis": 2, "keepdims": false, "select_last_index": true})"}) {
      p.push_back({.op = op, .inputs = {{"T", {4, 5, 6}, -3, 3}}, .attrs = attrs});  // ties in the integers
    }
    p.push_back({.op = op, .inputs = {{"T", {7}}}, .attrs = R"({"keepdims": false})"});
    p.push_back({.op = op, .inputs = {{"T", {}}}, .attrs = R"({"axis": -1})"});
  }
  for (const char* attrs : {R"({})", R"({"axis": 1})", R"({"axis": -1, "exclusive": true})",
                            R"({"axis": 0, "reverse": true})", R"({"axis": 1, "exclusive": true, "reverse": true})"}) {
    p.push_back({.op = "tensor.cumsum", .inputs = {{"T", {5, 37}}}, .attrs = attrs});
    p.push_back({.op = "tensor.cumsum", .inputs = {{"T", {3, 9}, -100, 100}}, .attrs = attrs, .dtypes = kSigned});
    p.push_back({.op = "tensor.cumsum", .inputs = {{"T", {3, 9}, 0, 200}}, .attrs = attrs, .dtypes = kUnsigned});
    for (DType d : Concat({kSigned, kUnsigned})) {  // wrap-around
      const auto [lo, hi] = IntRange(d);
      p.push_back({.op = "tensor.cumsum", .inputs = {{"T", {4, 6}, lo, hi}}, .attrs = attrs, .dtypes = {d}});
    }
  }
  p.push_back({.op = "tensor.cumsum", .inputs = {{"T", {1}}}});
  p.push_back({.op = "tensor.cumsum", .inputs = {{"T", {}}}, .attrs = R"({"exclusive": true})"});
  p.push_back({.op = "tensor.cumsum", .inputs = {{"T", {}}}});
  for (const char* op : {"tensor.triu", "tensor.tril"}) {
    for (const char* attrs : {R"({})", R"({"k": 1})", R"({"k": -2})", R"({"k": 10})", R"({"k": -10})"}) {
      p.push_back({.op = op, .inputs = {{"T", {2, 4, 6}}}, .attrs = attrs});
      p.push_back({.op = op, .inputs = {{"T", {5, 3}}}, .attrs = attrs});
    }
  }
  // Negative indices count from the end.
  p.push_back({.op = "tensor.gather_elements", .inputs = {{"T", {4, 6}}, {"i64", {4, 3}, -6, 5}}, .attrs = R"({"axis": 1})"});
  p.push_back({.op = "tensor.gather_elements", .inputs = {{"T", {4, 6}}, {"i32", {7, 6}, -4, 3}}});
  p.push_back({.op = "tensor.gather_elements", .inputs = {{"T", {3, 4, 5}}, {"i64", {3, 2, 5}, -4, 3}},
               .attrs = R"({"axis": -2})"});
  p.push_back({.op = "tensor.gather_elements", .inputs = {{"T", {5}}, {"i32", {8}, -5, 4}}});
}

void AddIndex(std::vector<DeviceProbe>& p) {
  // topk: ties (integers) go to the lower index.
  for (const char* attrs : {R"({"k": 4})", R"({"k": 4, "largest": false})", R"({"k": 9, "axis": 1})",
                            R"({"k": 1, "axis": -1, "largest": false})"}) {
    p.push_back({.op = "tensor.topk", .inputs = {{"T", {4, 9}, -3, 3}}, .attrs = attrs, .outputs = 2});
  }
  p.push_back({.op = "tensor.topk", .inputs = {{"T", {6, 5, 3}, -3, 3}}, .attrs = R"({"k": 3, "axis": 0})", .outputs = 2});
  p.push_back({.op = "tensor.topk", .inputs = {{"T", {6, 5, 3}}}, .attrs = R"({"k": 2, "axis": 1, "largest": false})",
               .outputs = 2});
  for (DType d : Concat({kSigned, kUnsigned})) {
    const auto [lo, hi] = IntRange(d);
    p.push_back({.op = "tensor.topk", .inputs = {{"T", {3, 11}, lo, hi}}, .attrs = R"({"k": 5})", .dtypes = {d},
                 .outputs = 2});
  }

  // Scatters: duplicate indices (the last update wins, or all combine), negative indices.
  for (const char* red : {"none", "add", "mul"}) {
    p.push_back({.op = "tensor.scatter_elements",
                 .inputs = {{"T", {4, 6}}, {"i64", {3, 6}, -4, 3}, {"T", {3, 6}}},
                 .attrs = fmt::format(R"({{"reduction": "{}"}})", red)});
    p.push_back({.op = "tensor.scatter_elements",
                 .inputs = {{"T", {4, 6}}, {"i32", {4, 5}, -6, 5}, {"T", {4, 5}}},
                 .attrs = fmt::format(R"({{"axis": 1, "reduction": "{}"}})", red)});
    p.push_back({.op = "tensor.scatter_elements",
                 .inputs = {{"T", {3, 4, 2}}, {"i64", {3, 7, 2}, -4, 3}, {"T", {3, 7, 2}}},
                 .attrs = fmt::format(R"({{"axis": -2, "reduction": "{}"}})", red)});
    const std::string attrs = fmt::format(R"({{"reduction": "{}"}})", red);
    p.push_back({.op = "tensor.scatter_nd", .inputs = {{"T", {4, 5, 3}}, {"i64", {6, 2}, -4, 3}, {"T", {6, 3}}},
                 .attrs = attrs});
    p.push_back({.op = "tensor.scatter_nd", .inputs = {{"T", {4, 5, 3}}, {"i32", {2, 3, 1}, -4, 3}, {"T", {2, 3, 5, 3}}},
                 .attrs = attrs});
    p.push_back({.op = "tensor.scatter_nd", .inputs = {{"T", {4, 5, 3}}, {"i64", {9, 3}, -3, 2}, {"T", {9}}},
                 .attrs = attrs});
    p.push_back({.op = "tensor.scatter_nd", .inputs = {{"T", {7}}, {"i64", {4, 1}, -7, 6}, {"T", {4}}}, .attrs = attrs});
  }
  p.push_back({.op = "tensor.gather_nd", .inputs = {{"T", {4, 5, 3}}, {"i64", {6, 2}, -4, 3}}});
  p.push_back({.op = "tensor.gather_nd", .inputs = {{"T", {4, 5, 3}}, {"i32", {2, 3, 1}, -4, 3}}});
  p.push_back({.op = "tensor.gather_nd", .inputs = {{"T", {4, 5, 3}}, {"i64", {2, 3}, -3, 2}}});
  p.push_back({.op = "tensor.gather_nd", .inputs = {{"T", {4, 5, 3}}, {"i64", {4, 2, 1}, -5, 4}},
               .attrs = R"({"batch_dims": 1})"});
  p.push_back({.op = "tensor.gather_nd", .inputs = {{"T", {2, 4, 5, 3}}, {"i32", {2, 4, 3, 1}, -5, 4}},
               .attrs = R"({"batch_dims": 2})"});
}

}  // namespace

void AddTensorProbes(std::vector<DeviceProbe>& p) {
  AddElementwise(p);
  AddAxis(p);
  AddIndex(p);
}

}  // namespace backplane::conformance
