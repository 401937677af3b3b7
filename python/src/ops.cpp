// backplane.op(...): one catalog operation on tensors, through runtime::RunOp.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <map>
#include <memory>
#include <mutex>

#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/error.hpp"
#include "backplane/runtime/run_op.hpp"
#include "bindings.hpp"
#include "devices.hpp"

namespace backplane::python {

Backend& ThreadBackend() {
  thread_local std::unique_ptr<Backend> backend = cpu::CreateBackend();
  return *backend;
}

runtime::GraphDevice* SharedDevice(const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<runtime::GraphDevice>> devices;
  const Device device = ParseDevice(name, "device");
  if (device.is_host()) return nullptr;
  const std::string key = DeviceName(device);
  std::lock_guard<std::mutex> lock(mutex);
  auto it = devices.find(key);
  if (it == devices.end()) it = devices.emplace(key, runtime::OpenGraphDevice(key)).first;
  return it->second.get();
}

void BindOps(nb::module_& m) {
  m.def("run_op",
        [](const std::string& op_id, nb::list inputs, nb::dict attrs, int num_outputs, const std::string& device) {
          const catalog::OpInfo* op = catalog::ResolveOp(op_id);
          if (op == nullptr) ThrowInvalidArgument("backplane.op", "op", "a catalog operation ID", "'" + op_id + "'");
          runtime::OpCall call;
          call.op = op->id;
          for (size_t i = 0; i < inputs.size(); ++i) {
            call.inputs.push_back(inputs[i].is_none() ? Tensor() : ToTensor(inputs[i]));  // None: omitted
          }
          call.attrs = ToAttrs(*op, attrs);
          call.num_outputs = num_outputs;
          call.device = SharedDevice(device);
          runtime::OpResult result;
          {
            nb::gil_scoped_release release;
            result = runtime::RunOp(call, ThreadBackend());
            call.inputs.clear();  // borrowed arrays are released (with the GIL) here or below
          }
          return nb::make_tuple(result.outputs, result.state);
        },
        nb::arg("op"), nb::arg("inputs"), nb::arg("attrs"), nb::arg("num_outputs") = -1, nb::arg("device") = "cpu",
        "Runs one operation: returns (outputs, state) as lists of Tensors.");
}

}  // namespace backplane::python
