// Process settings from Python: threads, SIMD target, devices, build information.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "backplane/cpu/targets.hpp"
#include "backplane/cpu/threads.hpp"
#include "backplane/runtime/graph_device.hpp"
#include "bindings.hpp"

namespace backplane::python {

void BindRuntime(nb::module_& m) {
  m.def("num_threads", &cpu::NumThreads, "Threads of the CPU pool.");
  m.def("set_num_threads", &cpu::SetNumThreads, nb::arg("threads"),
        "Sets the CPU pool size (>= 1); 0 restores BACKPLANE_NUM_THREADS or the hardware default.");
  m.def("targets", &cpu::RunnableTargets, "SIMD targets this CPU runs, best first.");
  m.def("selected_target", &cpu::SelectedTarget, "The SIMD target dispatch uses now.");
  m.def("set_target", [](const std::string& name) { cpu::ForceTarget(name); }, nb::arg("name"),
        "Restricts dispatch to one SIMD target ('' restores the default); process-wide.");
  m.def("devices", [] {
    std::vector<std::string> names{"cpu"};
    for (const std::string& d : runtime::BuiltGraphDevices()) names.push_back(d);
    return names;
  }, "Devices of this build (an XLA device still needs its PJRT plugin at run time).");
}

}  // namespace backplane::python
