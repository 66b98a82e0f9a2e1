// A reusable element-wise map dst[i] = op(src[i]) over contiguous memory: 128-bit vector
// loads/stores when both pointers are 16-byte aligned (scalar path otherwise), several
// independent loads in flight per thread, a scalar tail, optional PDL.
#pragma once

#include <sgl_kernel/utils.h>    // For div_ceil
#include <sgl_kernel/utils.cuh>  // For LaunchKernel, SGL_DEVICE, PDLWaitPrimary, PDLTriggerSecondary
#include <sgl_kernel/vec.cuh>    // For AlignedVector

#include <dlpack/dlpack.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace device::elementwise {

/// Block b covers vectors [b * kUnroll * blockDim.x, (b + 1) * kUnroll * blockDim.x); thread t
/// takes vectors t, t + blockDim.x, ... (coalesced). The last block also maps the < kVecN
/// elements after the last whole vector.
template <int kVecN, int kUnroll, bool kUsePDL, typename T, typename Op>
__global__ void unary_map_kernel(T* __restrict__ dst,
                                 const T* __restrict__ src,
                                 std::size_t n,
                                 Op op) {
  using vec_t = AlignedVector<T, kVecN>;
  const std::size_t num_vecs = n / kVecN;
  const std::size_t first =
      static_cast<std::size_t>(blockIdx.x) * blockDim.x * kUnroll + threadIdx.x;

  PDLWaitPrimary<kUsePDL>();

  vec_t v[kUnroll];
#pragma unroll
  for (int k = 0; k < kUnroll; ++k) {
    const std::size_t idx = first + static_cast<std::size_t>(k) * blockDim.x;
    if (idx < num_vecs) v[k].load(src, idx);
  }
#pragma unroll
  for (int k = 0; k < kUnroll; ++k) {
    const std::size_t idx = first + static_cast<std::size_t>(k) * blockDim.x;
    if (idx < num_vecs) {
#pragma unroll
      for (int i = 0; i < kVecN; ++i) v[k][i] = op(v[k][i]);
      v[k].store(dst, idx);
    }
  }
  if constexpr (kVecN > 1) {
    if (blockIdx.x == gridDim.x - 1) {
      const std::size_t i = num_vecs * kVecN + threadIdx.x;
      if (i < n) dst[i] = op(src[i]);
    }
  }

  PDLTriggerSecondary<kUsePDL>();
}

}  // namespace device::elementwise

namespace host::elementwise {

inline constexpr int kBlockSize = 256;
inline constexpr int kUnroll = 4;
inline constexpr std::size_t kVecBytes = 16;

inline bool is_vec_aligned(const void* ptr) {
  return reinterpret_cast<std::uintptr_t>(ptr) % kVecBytes == 0;
}

/// dst[i] = op(src[i]) for i < n on the stream of `device`. n == 0 launches nothing.
template <bool kUsePDL, typename T, typename Op>
void launch_unary_map(T* dst, const T* src, std::size_t n, Op op, DLDevice device) {
  if (n == 0) return;
  constexpr int kVecN = static_cast<int>(kVecBytes / sizeof(T));
  constexpr std::size_t kPerBlock = static_cast<std::size_t>(kBlockSize) * kUnroll;
  if (is_vec_aligned(dst) && is_vec_aligned(src)) {
    const std::size_t num_vecs = n / kVecN;
    const std::size_t grid = std::max<std::size_t>(1, div_ceil(num_vecs, kPerBlock));
    LaunchKernel(static_cast<unsigned>(grid), kBlockSize, device)
        .enable_pdl(kUsePDL)(
            device::elementwise::unary_map_kernel<kVecN, kUnroll, kUsePDL, T, Op>, dst, src, n, op);
  } else {
    const std::size_t grid = div_ceil(n, kPerBlock);
    LaunchKernel(static_cast<unsigned>(grid), kBlockSize, device)
        .enable_pdl(kUsePDL)(
            device::elementwise::unary_map_kernel<1, kUnroll, kUsePDL, T, Op>, dst, src, n, op);
  }
}

}  // namespace host::elementwise
