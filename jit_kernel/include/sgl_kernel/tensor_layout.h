// The layout checks of TensorMatcher: alignment of vector accesses and internal overlap. Each
// returns what is wrong (for the matcher's message), or nothing.
#pragma once

#include <sgl_kernel/tensor_view.h>  // For data_address
#include <sgl_kernel/utils.h>        // For dtype_bytes, details::concat

#include <tvm/ffi/container/tensor.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace host::details {

/// Whether every access of `bytes` bytes along the last dimension is aligned: the data address
/// and the byte stride of every other dimension of size > 1 are multiples of `bytes`. Empty
/// tensors pass.
inline std::optional<std::string> misalignment(const tvm::ffi::TensorView& view,
                                               std::size_t bytes) {
  if (view.numel() == 0) return std::nullopt;
  const auto address = reinterpret_cast<std::uintptr_t>(data_address(view));
  if (const auto offset = address % bytes; offset != 0) {
    return concat("is not ",
                  bytes,
                  "-byte aligned: its data address is ",
                  offset,
                  " bytes past a ",
                  bytes,
                  "-byte boundary (a view with a storage offset?)");
  }
  const auto elem_bytes = static_cast<std::int64_t>(dtype_bytes(view.dtype()));
  const auto alignment = static_cast<std::int64_t>(bytes);
  for (std::int64_t dim = 0; dim + 1 < view.ndim(); ++dim) {
    if (view.size(dim) <= 1) continue;
    const std::int64_t stride_bytes = view.stride(dim) * elem_bytes;
    if (stride_bytes % alignment != 0) {
      return concat("is not ",
                    bytes,
                    "-byte aligned: the stride of dim ",
                    dim,
                    " is ",
                    view.stride(dim),
                    " elements (",
                    stride_bytes,
                    " bytes), not a multiple of ",
                    bytes,
                    " bytes");
    }
  }
  return std::nullopt;
}

/// Whether two elements share memory (a stride of 0, or rows that overlap). Sufficient test:
/// with the dimensions of size > 1 sorted by stride, each stride exceeds the farthest offset the
/// smaller-stride dimensions reach.
inline std::optional<std::string> internal_overlap(const tvm::ffi::TensorView& view) {
  if (view.numel() == 0) return std::nullopt;
  std::vector<std::array<std::int64_t, 3>> dims;  // (|stride|, size, dim), size > 1
  for (std::int64_t dim = 0; dim < view.ndim(); ++dim) {
    const std::int64_t size = view.size(dim);
    if (size <= 1) continue;
    const std::int64_t stride = view.stride(dim);
    dims.push_back({stride < 0 ? -stride : stride, size, dim});
  }
  std::sort(dims.begin(), dims.end());
  std::int64_t reach = 0;  // the farthest offset reached by the dimensions checked so far
  for (const auto& [stride, size, dim] : dims) {
    if (stride <= reach) {
      return concat("has internal overlap (dim ",
                    dim,
                    " of size ",
                    size,
                    " has stride ",
                    view.stride(dim),
                    ", which revisits elements): a tensor the kernel writes must not alias itself");
    }
    reach += stride * (size - 1);
  }
  return std::nullopt;
}

}  // namespace host::details
