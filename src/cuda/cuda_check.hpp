// CUDA and cuBLAS status codes become backplane::Error naming the call; the CUDA backend never
// exits and never leaves a launch unchecked.
#pragma once

#include <cstdint>
#include <string_view>

namespace backplane::cuda {

// Throws Error (DeviceUnavailable when the driver has no usable GPU, OutOfMemory for an
// allocation failure, Internal otherwise) as "<call>: <cudaGetErrorString> (<name>)".
void CheckCuda(int status, std::string_view call);
void CheckCublas(int status, std::string_view call);
void CheckCufft(int status, std::string_view call);

// The end of a Backend method: the launch status of `op`'s kernels, then the completion of the
// device's stream (the CUDA backend is synchronous: a method returns with its output written).
void FinishMethod(std::string_view op);

}  // namespace backplane::cuda
