// BP_HD marks element functions that the CPU reference and the CUDA kernels share: host and
// device under nvcc, plain functions elsewhere.
#pragma once

#ifdef __CUDACC__
#define BP_HD __host__ __device__
#else
#define BP_HD
#endif
