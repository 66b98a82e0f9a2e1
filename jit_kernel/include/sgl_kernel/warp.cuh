// Warp-level reductions: device::warp::reduce_sum / reduce_max (every lane gets the result).
#pragma once

#include <sgl_kernel/math.cuh>   // For math::max
#include <sgl_kernel/utils.cuh>  // For SGL_DEVICE, kFullMask, kWarpThreads

#include <cstdint>

namespace device::warp {

using device::kFullMask;

template <typename T>
SGL_DEVICE T reduce_sum(T value, std::uint32_t mask = kFullMask) {
#pragma unroll
  for (int offset = kWarpThreads / 2; offset > 0; offset /= 2) {
    value = value + __shfl_xor_sync(mask, value, offset, kWarpThreads);
  }
  return value;
}

template <typename T>
SGL_DEVICE T reduce_max(T value, std::uint32_t mask = kFullMask) {
#pragma unroll
  for (int offset = kWarpThreads / 2; offset > 0; offset /= 2) {
    value = math::max(value, __shfl_xor_sync(mask, value, offset, kWarpThreads));
  }
  return value;
}

}  // namespace device::warp
