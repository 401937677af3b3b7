// The allocation ceiling: no single host tensor, and no planned graph, may need more bytes.
// It comes from BACKPLANE_MAX_ALLOC (bytes, or with a K/M/G/T suffix: "8G", "512M"; powers of
// 1024), read once; without it, the smaller of 64 GiB and the machine's physical memory.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace backplane {

inline constexpr const char* kMaxAllocVariable = "BACKPLANE_MAX_ALLOC";

// The ceiling in bytes. Throws InvalidArgument naming BACKPLANE_MAX_ALLOC when its value is bad.
uint64_t MaxAllocBytes();
// Replaces the ceiling for this process (tests); 0 goes back to the variable / default.
void SetMaxAllocBytes(uint64_t bytes);
// min(64 GiB, physical memory).
uint64_t DefaultMaxAllocBytes();
// "123", "8G", "512m", "1.5G" -> bytes; throws InvalidArgument naming `what` otherwise.
uint64_t ParseByteSize(std::string_view text, std::string_view what);
// "1.50 GiB (1610612736 bytes)"
std::string FormatBytes(uint64_t bytes);

// Throws Error(OutOfMemory) from `op` when `bytes` exceeds the ceiling; `what` says what needs
// them ("a f32[1048576, 1048576] tensor").
void CheckAllocation(std::string_view op, uint64_t bytes, std::string_view what);

// Overflow-checked arithmetic for sizes; on overflow throws InvalidArgument from `op` naming
// `what` (e.g. the shape).
uint64_t CheckedMul(uint64_t a, uint64_t b, std::string_view op, std::string_view what);
uint64_t CheckedAdd(uint64_t a, uint64_t b, std::string_view op, std::string_view what);

}  // namespace backplane
