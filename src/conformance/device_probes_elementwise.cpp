// Device conformance probes: elementwise math (erf, Trig, outer, dot, axpy) and reduction.*.
#include <fmt/format.h>

#include "conformance/device_probes.hpp"

namespace backplane::conformance {

void AddElementwiseProbes(std::vector<DeviceProbe>& p) {
  // Unary functions over their whole domain and a little outside it (NaN on both sides there).
  struct Range {
    const char* op;
    double lo, hi;
  };
  for (const Range& r : {Range{"math.erf", -5, 5}, Range{"math.tan", -1.55, 1.55}, Range{"math.asin", -1.1, 1.1},
                         Range{"math.acos", -1.1, 1.1}, Range{"math.atan", -20, 20}, Range{"math.sinh", -12, 12},
                         Range{"math.cosh", -12, 12}, Range{"math.asinh", -60, 60}, Range{"math.acosh", 0.9, 30},
                         Range{"math.atanh", -1.05, 1.05}}) {
    p.push_back({.op = r.op, .inputs = {{"T", {5, 7}, r.lo, r.hi}}});
    p.push_back({.op = r.op, .inputs = {{"T", {3}, -0.5, 0.5}}});  // near 0 (sinh, asinh, erf: small-x paths)
  }
  p.push_back({.op = "math.outer", .inputs = {{"T", {5}, -3, 3}, {"T", {7}, -3, 3}}});
  p.push_back({.op = "math.outer", .inputs = {{"T", {1}}, {"T", {4}}}});
  p.push_back({.op = "math.dot", .inputs = {{"T", {37}, -3, 3}, {"T", {37}, -3, 3}}});
  p.push_back({.op = "math.dot", .inputs = {{"T", {1}}, {"T", {1}}}});
  // i8: the exact i64 total of extreme products.
  p.push_back({.op = "math.dot", .inputs = {{"T", {301}, -128, 127}, {"T", {301}, -128, 127}}, .dtypes = {DType::Int8}});
  p.push_back({.op = "math.axpy", .inputs = {{"T", {4, 6}}, {"T", {4, 6}}}, .attrs = R"({"alpha": 0.37})"});
  p.push_back({.op = "math.axpy", .inputs = {{"T", {3, 5}}, {"T", {5}}}, .attrs = R"({"alpha": -1.1})"});
  p.push_back({.op = "math.axpy", .inputs = {{"T", {2, 3, 4}}, {"T", {3, 1}}}});

  // Reductions: every axis list of a rank-3 tensor (negative axes too), and a rank-1 one.
  for (const char* op : {"reduction.sum", "reduction.prod", "reduction.min", "reduction.max", "reduction.l1_norm"}) {
    for (const char* axes : {"[]", "[0]", "[1]", "[-1]", "[0, 2]", "[2, 0]", "[-3, -2]", "[0, 1, 2]"}) {
      p.push_back({.op = op, .inputs = {{"T", {3, 4, 5}, -1.5, 1.5}}, .attrs = fmt::format(R"({{"axis": {}}})", axes)});
    }
    p.push_back({.op = op, .inputs = {{"T", {7}}}, .attrs = R"({"axis": [0]})"});
    p.push_back({.op = op, .inputs = {{"T", {2, 9}, 0.5, 1.5}}});  // one sign: products and sums of size
  }
}

}  // namespace backplane::conformance
