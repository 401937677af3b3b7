#include "runtime/ops/lowering.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "backplane/error.hpp"

namespace backplane::runtime::ops {

void Fail(const Attrs& attrs, ErrorCode code, const std::string& detail) {
  throw Error(code, fmt::format("{} node '{}'", attrs.op(), attrs.node()), detail);
}

bool Present(std::span<const TensorType> in, size_t index) {
  return index < in.size() && in[index].dtype != DType::Invalid;
}

DType ExpectDType(const Attrs& attrs, std::span<const TensorType> in, size_t index,
                  DTypeSet allowed) {
  if (!Present(in, index)) Fail(attrs, ErrorCode::InvalidArgument, fmt::format("input {} is required", index));
  if (!allowed.Contains(in[index].dtype)) {
    Fail(attrs, ErrorCode::UnsupportedDType,
         fmt::format("input {} has dtype {}; expected one of {}", index, DTypeName(in[index].dtype),
                     DTypeSetToString(allowed)));
  }
  return in[index].dtype;
}

void ExpectSameDType(const Attrs& attrs, std::span<const TensorType> in,
                     std::initializer_list<size_t> indices) {
  const size_t first = *indices.begin();
  for (size_t i : indices) {
    if (!Present(in, i)) continue;
    if (in[i].dtype != in[first].dtype) {
      Fail(attrs, ErrorCode::UnsupportedDType,
           fmt::format("input {} has dtype {}, but input {} is {}", i, DTypeName(in[i].dtype), first,
                       DTypeName(in[first].dtype)));
    }
  }
}

void ExpectRank(const Attrs& attrs, std::span<const TensorType> in, size_t index, int64_t rank) {
  if (static_cast<int64_t>(in[index].shape.size()) != rank) {
    Fail(attrs, ErrorCode::ShapeMismatch,
         fmt::format("input {} must have rank {}, got shape {}", index, rank, ShapeToString(in[index].shape)));
  }
}

void ExpectMinRank(const Attrs& attrs, std::span<const TensorType> in, size_t index, int64_t rank) {
  if (static_cast<int64_t>(in[index].shape.size()) < rank) {
    Fail(attrs, ErrorCode::ShapeMismatch,
         fmt::format("input {} must have rank >= {}, got shape {}", index, rank, ShapeToString(in[index].shape)));
  }
}

void ExpectShape(const Attrs& attrs, std::span<const TensorType> in, size_t index, const Shape& shape) {
  if (in[index].shape != shape) {
    Fail(attrs, ErrorCode::ShapeMismatch,
         fmt::format("input {} must have shape {}, got {}", index, ShapeToString(shape),
                     ShapeToString(in[index].shape)));
  }
}

int64_t NormalizeAxis(const Attrs& attrs, const std::string& attr, int64_t axis, int64_t rank) {
  const int64_t lo = rank == 0 ? -1 : -rank;
  const int64_t hi = rank == 0 ? 1 : rank;
  if (axis < lo || axis >= hi) attrs.Fail(attr, fmt::format("in [{}, {})", lo, hi), std::to_string(axis));
  return axis < 0 ? axis + std::max<int64_t>(rank, 1) : axis;
}

Shape BroadcastShapes(const Attrs& attrs, const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      Fail(attrs, ErrorCode::ShapeMismatch,
           fmt::format("shapes {} and {} do not broadcast (dimension {}: {} vs {})", ShapeToString(a),
                       ShapeToString(b), i, da, db));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t Product(const Shape& shape, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end && i < shape.size(); ++i) p *= shape[i];
  return p;
}

// Writes `count` copies of the element of `bytes` bytes at `value` to dst.
static void FillRun(char* dst, const char* value, size_t bytes, int64_t count) {
  auto fill = [&](auto word) {
    std::memcpy(&word, value, sizeof(word));
    std::fill_n(reinterpret_cast<decltype(word)*>(dst), count, word);
  };
  if (bytes == 4) return fill(uint32_t{});
  if (bytes == 8) return fill(uint64_t{});
  if (bytes == 2) return fill(uint16_t{});
  if (bytes == 1) return fill(uint8_t{});
  for (int64_t j = 0; j < count; ++j) std::memcpy(dst + static_cast<size_t>(j) * bytes, value, bytes);
}

Tensor Expand(const Tensor& t, const Shape& shape) {
  if (t.shape() == shape) return t;
  Tensor out(t.dtype(), shape);
  const size_t rank = shape.size();
  const Shape& src_shape = t.shape();
  const size_t offset = rank - src_shape.size();
  // Source strides (elements) with 0 for broadcast dimensions.
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (size_t i = src_shape.size(); i-- > 0;) {
    strides[i + offset] = src_shape[i] == 1 ? 0 : stride;
    stride *= src_shape[i];
  }
  const int bits = DTypeBits(t.dtype());
  const int64_t n = out.numel();
  if (n == 0) return out;
  if (bits < 8) {
    std::vector<int64_t> index(rank, 0);
    int64_t src = 0;
    for (int64_t k = 0; k < n; ++k) {
      out.SetDouble(k, t.GetDouble(src));
      for (size_t d = rank; d-- > 0;) {
        ++index[d];
        src += strides[d];
        if (index[d] < shape[d]) break;
        src -= strides[d] * shape[d];
        index[d] = 0;
      }
    }
    return out;
  }
  // The innermost axes form one run: contiguous in the source (copied) or all broadcast (one
  // element repeated). The outer axes are walked with an index.
  size_t inner = rank;
  int64_t run = 1;
  const bool fill = rank > 0 && strides[rank - 1] == 0;
  while (inner > 0 && (fill ? strides[inner - 1] == 0 : strides[inner - 1] == run)) {
    run *= shape[inner - 1];
    --inner;
  }
  const size_t bytes = static_cast<size_t>(bits / 8);
  const auto* from = static_cast<const char*>(t.data());
  auto* to = static_cast<char*>(out.data());
  std::vector<int64_t> index(inner, 0);
  int64_t src = 0;
  for (int64_t k = 0; k < n; k += run) {
    char* dst = to + static_cast<size_t>(k) * bytes;
    if (fill) {
      FillRun(dst, from + static_cast<size_t>(src) * bytes, bytes, run);
    } else {
      std::memcpy(dst, from + static_cast<size_t>(src) * bytes, static_cast<size_t>(run) * bytes);
    }
    for (size_t d = inner; d-- > 0;) {
      ++index[d];
      src += strides[d];
      if (index[d] < shape[d]) break;
      src -= strides[d] * shape[d];
      index[d] = 0;
    }
  }
  return out;
}

Tensor MoveAxisToEnd(Backend& backend, const Tensor& t, int64_t axis) {
  const int64_t rank = t.rank();
  if (axis == rank - 1 || rank <= 1) return t;
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i) {
    if (i != axis) perm.push_back(i);
  }
  perm.push_back(axis);
  Shape shape;
  for (int64_t p : perm) shape.push_back(t.shape()[static_cast<size_t>(p)]);
  Tensor out(t.dtype(), shape);
  backend.Shape().Transpose(t.data(), out.data(), t.shape().data(), rank, perm.data(), t.dtype());
  return out;
}

Tensor MoveAxisFromEnd(Backend& backend, const Tensor& t, int64_t axis) {
  const int64_t rank = t.rank();
  if (axis == rank - 1 || rank <= 1) return t;
  // Inverse of MoveAxisToEnd: the last axis goes back to position `axis`.
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < rank - 1; ++i) {
    if (i == axis) perm.push_back(rank - 1);
    perm.push_back(i);
  }
  if (axis == rank - 1) perm.push_back(rank - 1);
  Shape shape;
  for (int64_t p : perm) shape.push_back(t.shape()[static_cast<size_t>(p)]);
  Tensor out(t.dtype(), shape);
  backend.Shape().Transpose(t.data(), out.data(), t.shape().data(), rank, perm.data(), t.dtype());
  return out;
}

std::vector<TensorType> SameAsInput0(std::span<const TensorType> in, const Attrs& attrs,
                                     DTypeSet allowed) {
  ExpectDType(attrs, in, 0, allowed);
  return {in[0]};
}

OpImpl UnaryOpImpl(UnaryKernel kernel, DTypeSet allowed) {
  return OpImpl{
      [allowed](std::span<const TensorType> in, const Attrs& attrs) {
        return SameAsInput0(in, attrs, allowed);
      },
      [kernel](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        kernel(ctx.backend, out[0].data(), in[0].data(), in[0].numel(), in[0].dtype());
      }};
}

OpImpl BinaryOpImpl(BinaryKernel kernel, DTypeSet allowed) {
  return OpImpl{
      [allowed](std::span<const TensorType> in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, allowed);
        ExpectSameDType(attrs, in, {0, 1});
        return std::vector<TensorType>{{in[0].dtype, BroadcastShapes(attrs, in[0].shape, in[1].shape)}};
      },
      [kernel](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const Tensor a = Expand(in[0], out[0].shape());
        const Tensor b = Expand(in[1], out[0].shape());
        kernel(ctx.backend, out[0].data(), a.data(), b.data(), out[0].numel(), out[0].dtype());
      }};
}

OpImpl AxisRowOpImpl(RowKernel kernel, DTypeSet allowed) {
  return OpImpl{
      [allowed](std::span<const TensorType> in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, allowed);
        NormalizeAxis(attrs, "axis", attrs.Int("axis"), static_cast<int64_t>(in[0].shape.size()));
        return std::vector<TensorType>{in[0]};
      },
      [kernel](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const int64_t rank = in[0].rank();
        if (rank == 0) {
          kernel(ctx.backend, out[0].data(), in[0].data(), 1, 1, in[0].dtype());
          return;
        }
        const int64_t axis = NormalizeAxis(ctx.attrs, "axis", ctx.attrs.Int("axis"), rank);
        const Tensor moved = MoveAxisToEnd(ctx.backend, in[0], axis);
        const int64_t row = moved.shape().back();
        const int64_t rows = row == 0 ? 0 : moved.numel() / row;
        if (axis == rank - 1) {
          kernel(ctx.backend, out[0].data(), moved.data(), rows, row, moved.dtype());
          return;
        }
        Tensor tmp(moved.dtype(), moved.shape());
        kernel(ctx.backend, tmp.data(), moved.data(), rows, row, moved.dtype());
        const Tensor back = MoveAxisFromEnd(ctx.backend, tmp, axis);
        std::memcpy(out[0].data(), back.data(), back.nbytes());
      }};
}

}  // namespace backplane::runtime::ops
