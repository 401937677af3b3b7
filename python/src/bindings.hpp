// Shared pieces of the _backplane extension module: tensor conversion and attribute parsing.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <string>

#include "backplane/catalog/catalog.hpp"
#include "backplane/ir/graph.hpp"
#include "backplane/tensor.hpp"

namespace backplane::python {

namespace nb = nanobind;

// A Tensor from a backplane.Tensor, or from any object with the buffer protocol or __dlpack__
// (NumPy, PyTorch). Contiguous, element-aligned host memory is shared, not copied; anything else
// (strided, bool's bytes, int4) is copied once. `dtype` overrides the element type of a raw
// uint8/uint16 array (ml_dtypes bf16/fp8 arrive as such views).
Tensor ToTensor(nb::handle obj, const std::string& dtype = "");

// A NumPy array on the tensor's memory (zero-copy for every dtype NumPy or ml_dtypes lays out
// like Backplane; bool and int4 are unpacked into a new array).
nb::object ToNumpy(const Tensor& t);

// A Python value converted to the attribute's catalog type; TypeError naming op and attribute.
ir::AttrValue ToAttr(const catalog::AttrSpec& spec, nb::handle value, const std::string& op);
ir::AttrMap ToAttrs(const catalog::OpInfo& op, nb::handle kwargs);
nb::object FromAttr(const ir::AttrValue& value);

void BindErrors(nb::module_& m);
void BindTensor(nb::module_& m);
void BindCatalog(nb::module_& m);
void BindOps(nb::module_& m);
void BindGraph(nb::module_& m);
void BindModels(nb::module_& m);
void BindRuntime(nb::module_& m);

}  // namespace backplane::python
