// Tensor files: NumPy .npy and .safetensors. Writers go through a temporary file and a rename, so
// a failed write never leaves a half-written file under the final name.
#pragma once

#include <map>
#include <string>

#include "backplane/tensor.hpp"

namespace backplane::io {

// .npy (format 1.0-3.0). bf16 is stored as NumPy's 2-byte void "|V2" (raw bfloat16 bits);
// see docs/graph-format.md for the full dtype table.
Tensor ReadNpy(const std::string& path);
void WriteNpy(const std::string& path, const Tensor& tensor);

// .safetensors: tensors by name (written in name order); metadata goes into "__metadata__".
std::map<std::string, Tensor> ReadSafetensors(const std::string& path);
void WriteSafetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace backplane::io
