// A reusable element-wise map dst[i] = op(src[i]) over contiguous memory: 128-bit vector
// loads/stores when both pointers are 16-byte aligned (scalar path otherwise), several
// independent loads in flight per thread, a scalar tail, optional PDL.
#pragma once

#include <sgl_kernel/utils.h>      // For div_ceil
#include <sgl_kernel/runtime.cuh>  // For runtime::get_sm_count, runtime::get_blocks_per_sm
#include <sgl_kernel/utils.cuh>  // For LaunchKernel, SGL_DEVICE, PDLWaitPrimary, PDLTriggerSecondary
#include <sgl_kernel/vec.cuh>    // For AlignedVector

#include <dlpack/dlpack.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

// Tuning knobs (compile-time; the defaults were measured on H100/H200, see docs/readme).
#ifndef SGL_ELEMENTWISE_UNROLL
#define SGL_ELEMENTWISE_UNROLL 4
#endif
#ifndef SGL_ELEMENTWISE_BLOCK
#define SGL_ELEMENTWISE_BLOCK 256
#endif
#ifndef SGL_ELEMENTWISE_PERSISTENT
#define SGL_ELEMENTWISE_PERSISTENT 0
#endif
#ifndef SGL_ELEMENTWISE_EARLY_TRIGGER
#define SGL_ELEMENTWISE_EARLY_TRIGGER 0
#endif
#ifndef SGL_ELEMENTWISE_STREAMING
#define SGL_ELEMENTWISE_STREAMING 0
#endif

namespace device::elementwise {

template <typename V>
SGL_DEVICE V load_vec(const V* ptr) {
#if SGL_ELEMENTWISE_STREAMING
  V v;
  if constexpr (sizeof(V) == 16) {
    *reinterpret_cast<int4*>(&v) = __ldcs(reinterpret_cast<const int4*>(ptr));
  } else {
    v = *ptr;
  }
  return v;
#else
  return *ptr;
#endif
}

template <typename V>
SGL_DEVICE void store_vec(V* ptr, const V& v) {
#if SGL_ELEMENTWISE_STREAMING
  if constexpr (sizeof(V) == 16) {
    __stcs(reinterpret_cast<int4*>(ptr), *reinterpret_cast<const int4*>(&v));
  } else {
    *ptr = v;
  }
#else
  *ptr = v;
#endif
}

/// Tile t covers vectors [t * kUnroll * blockDim.x, (t + 1) * kUnroll * blockDim.x); thread i
/// of the block takes vectors i, i + blockDim.x, ... of it (coalesced). Blocks stride over tiles.
/// Block 0 also maps the < kVecN elements after the last whole vector.
template <int kVecN, int kUnroll, bool kUsePDL, typename T, typename Op>
__global__ void unary_map_kernel(T* __restrict__ dst,
                                 const T* __restrict__ src,
                                 std::size_t n,
                                 Op op) {
  using vec_t = AlignedVector<T, kVecN>;
  const std::size_t num_vecs = n / kVecN;
  const std::size_t tile_vecs = static_cast<std::size_t>(blockDim.x) * kUnroll;
  const std::size_t num_tiles = (num_vecs + tile_vecs - 1) / tile_vecs;
  const auto* src_vec = reinterpret_cast<const vec_t*>(src);
  auto* dst_vec = reinterpret_cast<vec_t*>(dst);

  PDLWaitPrimary<kUsePDL>();
#if SGL_ELEMENTWISE_EARLY_TRIGGER
  PDLTriggerSecondary<kUsePDL>();
#endif

  for (std::size_t tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
    const std::size_t first = tile * tile_vecs + threadIdx.x;
    vec_t v[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const std::size_t idx = first + static_cast<std::size_t>(k) * blockDim.x;
      if (idx < num_vecs) v[k] = load_vec(src_vec + idx);
    }
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const std::size_t idx = first + static_cast<std::size_t>(k) * blockDim.x;
      if (idx < num_vecs) {
#pragma unroll
        for (int i = 0; i < kVecN; ++i) v[k][i] = op(v[k][i]);
        store_vec(dst_vec + idx, v[k]);
      }
    }
  }
  if constexpr (kVecN > 1) {
    if (blockIdx.x == 0) {
      const std::size_t i = num_vecs * kVecN + threadIdx.x;
      if (i < n) dst[i] = op(src[i]);
    }
  }

#if !SGL_ELEMENTWISE_EARLY_TRIGGER
  PDLTriggerSecondary<kUsePDL>();
#endif
}

}  // namespace device::elementwise

namespace host::elementwise {

inline constexpr int kBlockSize = SGL_ELEMENTWISE_BLOCK;
inline constexpr int kUnroll = SGL_ELEMENTWISE_UNROLL;
inline constexpr std::size_t kVecBytes = 16;

inline bool is_vec_aligned(const void* ptr) {
  return reinterpret_cast<std::uintptr_t>(ptr) % kVecBytes == 0;
}

template <int kVecN, bool kUsePDL, typename T, typename Op>
void launch_unary_map_impl(T* dst, const T* src, std::size_t n, Op op, DLDevice device) {
  constexpr auto kernel = device::elementwise::unary_map_kernel<kVecN, kUnroll, kUsePDL, T, Op>;
  constexpr std::size_t kTileVecs = static_cast<std::size_t>(kBlockSize) * kUnroll;
  std::size_t grid = std::max<std::size_t>(1, div_ceil(n / kVecN, kTileVecs));
#if SGL_ELEMENTWISE_PERSISTENT
  const auto resident = static_cast<std::size_t>(runtime::get_sm_count(device.device_id)) *
                        runtime::get_blocks_per_sm(kernel, kBlockSize, 0, device.device_id);
  grid = std::min(grid, std::max<std::size_t>(1, resident));
#endif
  LaunchKernel(static_cast<unsigned>(grid), kBlockSize, device)
      .enable_pdl(kUsePDL)(kernel, dst, src, n, op);
}

/// dst[i] = op(src[i]) for i < n on the stream of `device`. n == 0 launches nothing.
template <bool kUsePDL, typename T, typename Op>
void launch_unary_map(T* dst, const T* src, std::size_t n, Op op, DLDevice device) {
  if (n == 0) return;
  constexpr int kVecN = static_cast<int>(kVecBytes / sizeof(T));
  if (is_vec_aligned(dst) && is_vec_aligned(src)) {
    launch_unary_map_impl<kVecN, kUsePDL>(dst, src, n, op, device);
  } else {
    launch_unary_map_impl<1, kUsePDL>(dst, src, n, op, device);
  }
}

}  // namespace host::elementwise
