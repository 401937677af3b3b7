// TensorProto <-> Tensor: ONNX element types, raw_data and the typed fields, external data.
#pragma once

#include <onnx/onnx_pb.h>

#include <optional>
#include <string>

#include "backplane/dtype.hpp"
#include "backplane/tensor.hpp"

namespace backplane::onnx {

// The Backplane dtype of an ONNX TensorProto.DataType; nullopt for STRING, UNDEFINED and types
// Backplane lacks.
std::optional<DType> DTypeFromOnnx(int32_t elem_type);
std::string OnnxTypeName(int32_t elem_type);  // "FLOAT", "INT64", ... or the number

// Converts a TensorProto. `where` prefixes errors ("model.onnx: initializer 'w'"); `base_dir` is
// where external data files are looked up. Every size is checked against the data present
// before anything is allocated.
Tensor TensorFromProto(const ::onnx::TensorProto& proto, const std::string& where,
                       const std::string& base_dir);

// Reads a whole file into memory after checking its size against `max_bytes`.
std::string ReadFileBytes(const std::string& path, const std::string& what, uint64_t max_bytes);

}  // namespace backplane::onnx
