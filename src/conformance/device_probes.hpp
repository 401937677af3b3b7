// Probes for the per-op device conformance (`backplane verify --device`): the inputs and
// attributes one op is run with, on the scalar CPU reference and on the device. An op without a
// probe gets the default one (every required input T[4, 6] in [-2, 2]).
#pragma once

#include <string>
#include <vector>

#include "backplane/dtype.hpp"
#include "backplane/tensor.hpp"

namespace backplane::conformance {

struct ProbeInput {
  std::string dtype = "T";  // "T": the dtype under test; "": an omitted optional input; else fixed
  Shape shape = {};
  double lo = -2.0;  // uniform values in [lo, hi] (integers: rounded; bool: 0/1)
  double hi = 2.0;
};

struct DeviceProbe {
  std::string op = "";
  std::vector<ProbeInput> inputs = {};
  std::string attrs = "{}";   // the node's attrs as graph JSON
  std::vector<DType> dtypes = {};  // empty: every dtype the op accepts that the harness tests
  int outputs = 0;            // outputs to name; 0: the op's required outputs
  double tolerance_scale = 1.0;  // times DefaultTolerance(dtype), for ops whose device math differs
  int runs = 1;                  // > 1 for stateful ops: the state must carry over
  std::string params = "[]";
  // The second pass with NaN/+-Inf/-0 planted in the inputs: "exact" (same values, NaN == NaN),
  // "nonfinite" (where both are non-finite, which of NaN/+-Inf may differ: for algorithms whose
  // Inf arithmetic order is not the reference's, e.g. FFT butterflies), "off" (with a reason).
  std::string special_values = "exact";     // graph parameters as graph JSON (ops that address them by name)
};

// Every probe of every family; several probes per op are allowed (different attributes).
std::vector<DeviceProbe> DeviceProbes();

// Probes the dispatch audit adds: paths only taken at scale (attention lowered to
// Attention.FlashAttention on long sequences), too slow for every device run.
std::vector<DeviceProbe> DispatchProbes();

// Family tables (device_probes_<family>.cpp).
void AddElementwiseProbes(std::vector<DeviceProbe>& p);
void AddActivationProbes(std::vector<DeviceProbe>& p);
void AddNnProbes(std::vector<DeviceProbe>& p);
void AddTensorProbes(std::vector<DeviceProbe>& p);
void AddTrainProbes(std::vector<DeviceProbe>& p);
void AddResearchProbes(std::vector<DeviceProbe>& p);

}  // namespace backplane::conformance
