// CTA-level reductions through shared memory: device::cta::reduce_max / reduce_sum.
#pragma once

#include <sgl_kernel/math.cuh>   // For math::max
#include <sgl_kernel/utils.cuh>  // For SGL_DEVICE, kWarpThreads
#include <sgl_kernel/warp.cuh>   // For warp::reduce_max, warp::reduce_sum

#include <cmath>

namespace device::cta {

/// Max over the CTA; the result lands in smem[0]. `smem` holds >= blockDim.x / 32 floats.
/// `min_value` fills lanes beyond the number of warps (default -inf, the identity of max).
/// The caller must __syncthreads() before reading smem[0].
template <typename T>
SGL_DEVICE void reduce_max(T value, float* smem, float min_value = -INFINITY) {
  const unsigned warp_id = threadIdx.x / kWarpThreads;
  const unsigned lane = threadIdx.x % kWarpThreads;
  const float warp_max = warp::reduce_max(static_cast<float>(value));
  if (lane == 0) smem[warp_id] = warp_max;
  __syncthreads();
  if (warp_id == 0) {
    const unsigned num_warps = (blockDim.x + kWarpThreads - 1) / kWarpThreads;
    const float v = lane < num_warps ? smem[lane] : min_value;
    const float result = warp::reduce_max(v);
    if (lane == 0) smem[0] = result;
  }
}

/// Sum over the CTA; the result lands in smem[0]. Same contract as reduce_max.
template <typename T>
SGL_DEVICE void reduce_sum(T value, float* smem) {
  const unsigned warp_id = threadIdx.x / kWarpThreads;
  const unsigned lane = threadIdx.x % kWarpThreads;
  const float warp_sum = warp::reduce_sum(static_cast<float>(value));
  if (lane == 0) smem[warp_id] = warp_sum;
  __syncthreads();
  if (warp_id == 0) {
    const unsigned num_warps = (blockDim.x + kWarpThreads - 1) / kWarpThreads;
    const float v = lane < num_warps ? smem[lane] : 0.0f;
    const float result = warp::reduce_sum(v);
    if (lane == 0) smem[0] = result;
  }
}

}  // namespace device::cta
