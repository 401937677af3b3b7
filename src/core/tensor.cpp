#include "backplane/tensor.hpp"

#include <fmt/format.h>

#include <cstring>
#include <new>

#include "backplane/convert.hpp"
#include "backplane/error.hpp"
#include "backplane/memory_limit.hpp"

namespace backplane {
namespace {

constexpr std::align_val_t kAlignment{64};

thread_local StorageAllocator scoped_allocator = nullptr;

std::shared_ptr<std::byte[]> Allocate(size_t bytes, DType dtype, const Shape& shape) {
  if (bytes > MaxAllocBytes()) {
    CheckAllocation("Tensor", bytes, fmt::format("a {}{} tensor", DTypeName(dtype), ShapeToString(shape)));
  }
  const size_t padded = (bytes + 63) / 64 * 64 + 64;
  if (scoped_allocator != nullptr) return scoped_allocator(padded);
  auto* raw = static_cast<std::byte*>(::operator new[](padded, kAlignment, std::nothrow));
  if (raw == nullptr) {
    throw Error(ErrorCode::OutOfMemory, "Tensor",
                fmt::format("cannot allocate {} bytes for a {}{} tensor", bytes, DTypeName(dtype),
                            ShapeToString(shape)));
  }
  std::memset(raw, 0, padded);
  return std::shared_ptr<std::byte[]>(raw, [](std::byte* p) { ::operator delete[](p, kAlignment); });
}

}  // namespace

ScopedStorageAllocator::ScopedStorageAllocator(StorageAllocator allocator) : previous_(scoped_allocator) {
  scoped_allocator = allocator;
}
ScopedStorageAllocator::~ScopedStorageAllocator() { scoped_allocator = previous_; }

int64_t NumElements(std::span<const int64_t> shape) {
  bool empty = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) {
      ThrowInvalidArgument("Tensor", fmt::format("shape[{}]", i), ">= 0", std::to_string(shape[i]));
    }
    empty = empty || shape[i] == 0;
  }
  if (empty) return 0;
  int64_t n = 1;
  for (int64_t d : shape) {
    if (__builtin_mul_overflow(n, d, &n)) {
      throw Error(ErrorCode::InvalidArgument, "Tensor",
                  fmt::format("shape {} has more than 2^63 - 1 elements", ShapeToString(shape)));
    }
  }
  return n;
}

std::string ShapeToString(std::span<const int64_t> shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

Tensor::Tensor(DType dtype, Shape shape)
    : dtype_(dtype), shape_(std::move(shape)), numel_(NumElements(shape_)) {
  if (dtype == DType::Invalid) ThrowInvalidArgument("Tensor", "dtype", "a valid dtype", "invalid");
  storage_ = Allocate(nbytes(), dtype_, shape_);
}

int64_t Tensor::dim(int64_t axis) const {
  const int64_t r = rank();
  const int64_t a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r) {
    ThrowInvalidArgument("Tensor.dim", "axis", fmt::format("in [{}, {})", -r, r),
                         std::to_string(axis));
  }
  return shape_[static_cast<size_t>(a)];
}

Tensor Tensor::Reshaped(Shape shape) const {
  if (NumElements(shape) != numel_) {
    ThrowShapeMismatch("Tensor.Reshaped", "shape", fmt::format("{} elements", numel_),
                       ShapeToString(shape));
  }
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::FromHostStorage(DType dtype, Shape shape, std::shared_ptr<std::byte[]> storage) {
  if (dtype == DType::Invalid) ThrowInvalidArgument("Tensor.FromHostStorage", "dtype", "a valid dtype", "invalid");
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.numel_ = NumElements(t.shape_);
  if (!storage && t.nbytes() > 0) ThrowInvalidArgument("Tensor.FromHostStorage", "storage", "a buffer", "null");
  t.storage_ = std::move(storage);
  return t;
}

Tensor Tensor::WithStorageOf(const Tensor& donor, DType dtype, Shape shape) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.numel_ = NumElements(t.shape_);
  if (t.nbytes() > donor.nbytes()) {
    throw Error(ErrorCode::Internal, "Tensor.WithStorageOf", "donor storage too small");
  }
  t.storage_ = donor.storage_;
  return t;
}

Tensor Tensor::OnDevice(DType dtype, Shape shape, std::shared_ptr<const DeviceStorage> storage) {
  if (!storage) throw Error(ErrorCode::Internal, "Tensor.OnDevice", "null device storage");
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.numel_ = NumElements(t.shape_);
  t.device_storage_ = std::move(storage);
  return t;
}

Tensor Tensor::ToHost() const {
  if (!device_storage_) return *this;
  Tensor t(dtype_, shape_);
  device_storage_->CopyToHost(t.storage_.get(), t.nbytes());
  return t;
}

void Tensor::ThrowNotOnHost() const {
  throw Error(ErrorCode::InvalidArgument, "Tensor",
              fmt::format("a {}{} tensor on {} has no host data; copy it with ToHost()", DTypeName(dtype_),
                          ShapeToString(shape_), DeviceName(device())));
}

Tensor Tensor::Clone() const {
  if (device_storage_) return ToHost();
  Tensor t(dtype_, shape_);
  if (nbytes() > 0) std::memcpy(t.data(), data(), nbytes());
  return t;
}

double Tensor::GetDouble(int64_t i) const {
  const void* p = data();
  switch (dtype_) {
    case DType::Float64: return static_cast<const double*>(p)[i];
    case DType::Float32: return static_cast<const float*>(p)[i];
    case DType::Float16: return F16ToF32(static_cast<const uint16_t*>(p)[i]);
    case DType::BFloat16: return BF16ToF32(static_cast<const uint16_t*>(p)[i]);
    case DType::Float8E4M3: return F8E4M3ToF32(static_cast<const uint8_t*>(p)[i]);
    case DType::Float8E5M2: return F8E5M2ToF32(static_cast<const uint8_t*>(p)[i]);
    case DType::Int64: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case DType::Int32: return static_cast<const int32_t*>(p)[i];
    case DType::Int16: return static_cast<const int16_t*>(p)[i];
    case DType::Int8: return static_cast<const int8_t*>(p)[i];
    case DType::Int4: return LoadInt4(p, i);
    case DType::Uint64: return static_cast<double>(static_cast<const uint64_t*>(p)[i]);
    case DType::Uint32: return static_cast<const uint32_t*>(p)[i];
    case DType::Uint16: return static_cast<const uint16_t*>(p)[i];
    case DType::Uint8: return static_cast<const uint8_t*>(p)[i];
    case DType::Bool: return LoadBool(p, i) ? 1.0 : 0.0;
    default: break;
  }
  ThrowUnsupportedDType("Tensor.GetDouble", "dtype", dtype_,
                        kRealDTypes);
}

void Tensor::SetDouble(int64_t i, double v) {
  void* p = data();
  switch (dtype_) {
    case DType::Float64: static_cast<double*>(p)[i] = v; return;
    case DType::Float32: static_cast<float*>(p)[i] = static_cast<float>(v); return;
    case DType::Float16: static_cast<uint16_t*>(p)[i] = F32ToF16(static_cast<float>(v)); return;
    case DType::BFloat16: static_cast<uint16_t*>(p)[i] = F32ToBF16(static_cast<float>(v)); return;
    case DType::Float8E4M3: static_cast<uint8_t*>(p)[i] = F32ToF8E4M3(static_cast<float>(v)); return;
    case DType::Float8E5M2: static_cast<uint8_t*>(p)[i] = F32ToF8E5M2(static_cast<float>(v)); return;
    case DType::Int64: static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v); return;
    case DType::Int32: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v); return;
    case DType::Int16: static_cast<int16_t*>(p)[i] = static_cast<int16_t>(v); return;
    case DType::Int8: static_cast<int8_t*>(p)[i] = static_cast<int8_t>(v); return;
    case DType::Int4: StoreInt4(p, i, static_cast<int>(v)); return;
    case DType::Uint64: static_cast<uint64_t*>(p)[i] = static_cast<uint64_t>(v); return;
    case DType::Uint32: static_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(v); return;
    case DType::Uint16: static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(v); return;
    case DType::Uint8: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v); return;
    case DType::Bool: StoreBool(p, i, v != 0.0); return;
    default: break;
  }
  ThrowUnsupportedDType("Tensor.SetDouble", "dtype", dtype_,
                        kRealDTypes);
}

std::vector<double> Tensor::ToDoubles() const {
  std::vector<double> out(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) out[static_cast<size_t>(i)] = GetDouble(i);
  return out;
}

Tensor Tensor::FromDoubles(DType dtype, Shape shape, std::span<const double> values) {
  Tensor t(dtype, std::move(shape));
  if (static_cast<int64_t>(values.size()) != t.numel()) {
    ThrowShapeMismatch("Tensor.FromDoubles", "values", fmt::format("{} values", t.numel()),
                       std::to_string(values.size()));
  }
  for (int64_t i = 0; i < t.numel(); ++i) t.SetDouble(i, values[static_cast<size_t>(i)]);
  return t;
}

}  // namespace backplane
