// Device probes as runnable one-node graphs: the probes of each op, the dtypes they run in, the
// graph JSON and the seeded inputs. Shared by the device matrix and the dispatch audit.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "backplane/catalog/catalog.hpp"
#include "backplane/tensor.hpp"
#include "conformance/device_probes.hpp"

namespace backplane::conformance {

// The dtypes the device matrix runs, in this order.
const std::vector<DType>& TestedDTypes();
// Every required input T[4, 6] in [-2, 2]: the probe of an op that has none.
DeviceProbe DefaultProbe(const catalog::OpInfo& op);
// Probes keyed by canonical op ID (aliases resolved); throws on an unknown op.
std::map<std::string, std::vector<DeviceProbe>> ProbesByOp(std::vector<DeviceProbe> probes);
// The op's probes, or its default one when it has none.
std::vector<DeviceProbe> ProbesOf(const std::map<std::string, std::vector<DeviceProbe>>& by_op,
                                  const catalog::OpInfo& op);
// Whether the probe runs in `dtype` (its own dtype list, else the op's).
bool Accepts(const catalog::OpInfo& op, const DeviceProbe& probe, DType dtype);
// The one-node graph of the probe in `dtype`: inputs in0.., outputs as named.
std::string GraphJson(const DeviceProbe& probe, DType dtype, const std::vector<std::string>& outputs);
// out0.. for the probe's output count (0: the op's required outputs, at least one).
std::vector<std::string> ProbeOutputNames(const catalog::OpInfo& op, const DeviceProbe& probe);
// The probe's seeded inputs in `dtype` (probe_index: its position among the op's probes).
std::map<std::string, Tensor> ProbeInputs(const catalog::OpInfo& op, const DeviceProbe& probe, size_t probe_index,
                                          DType dtype);
// Input shapes by name, for Executor::Placement.
std::map<std::string, Shape> ProbeShapes(const DeviceProbe& probe);
// Uniform values in [lo, hi] from an xorshift stream (integers rounded, bool 0/1).
Tensor RandomTensor(DType dtype, const Shape& shape, double lo, double hi, uint64_t seed);

}  // namespace backplane::conformance
