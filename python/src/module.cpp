// The _backplane extension module; the Python-facing API is the backplane package around it.
#include "bindings.hpp"

NB_MODULE(_backplane, m) {
  m.doc() = "Backplane's C++ core (use the backplane package)";
  m.attr("__version__") = BACKPLANE_VERSION;
  backplane::python::BindErrors(m);
  backplane::python::BindTensor(m);
  backplane::python::BindCatalog(m);
  backplane::python::BindOps(m);
  backplane::python::BindGraph(m);
  backplane::python::BindModels(m);
  backplane::python::BindRuntime(m);
}
