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

/// Tile t covers vectors [t * kUnroll * blockDim.x, (t + 1) * kUnroll * blockDim.x); thread i
/// of the block takes vectors i, i + blockDim.x, ... of it (coalesced). Blocks stride over tiles.
/// Block 0 also maps the < kVecN elements after the last whole vector. Index is uint32_t when
/// every index fits (cheaper address arithmetic), else uint64_t.
template <int kVecN, int kUnroll, bool kUsePDL, typename Index, typename T, typename Op>
__global__ void unary_map_kernel(T* __restrict__ dst, const T* __restrict__ src, Index n, Op op) {
  using vec_t = AlignedVector<T, kVecN>;
  const Index num_vecs = n / kVecN;
  const Index tile_vecs = static_cast<Index>(blockDim.x) * kUnroll;
  const Index num_tiles = (num_vecs + tile_vecs - 1) / tile_vecs;
  const auto* src_vec = reinterpret_cast<const vec_t*>(src);
  auto* dst_vec = reinterpret_cast<vec_t*>(dst);

  PDLWaitPrimary<kUsePDL>();

  for (Index tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
    const Index first = tile * tile_vecs + threadIdx.x;
    vec_t v[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const Index idx = first + static_cast<Index>(k) * blockDim.x;
      if (idx < num_vecs) v[k] = src_vec[idx];
    }
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const Index idx = first + static_cast<Index>(k) * blockDim.x;
      if (idx < num_vecs) {
#pragma unroll
        for (int i = 0; i < kVecN; ++i) v[k][i] = op(v[k][i]);
        dst_vec[idx] = v[k];
      }
    }
  }
  if constexpr (kVecN > 1) {
    if (blockIdx.x == 0) {
      const Index i = num_vecs * kVecN + threadIdx.x;
      if (i < n) dst[i] = op(src[i]);
    }
  }

  PDLTriggerSecondary<kUsePDL>();
}

}  // namespace device::elementwise

namespace host::elementwise {

/// Threads per block and vectors each thread loads before it stores any.
inline constexpr int kBlockSize = 128;
inline constexpr int kUnroll = 2;
inline constexpr std::size_t kVecBytes = 16;
inline constexpr std::size_t kMaxGrid = 1u << 30;

inline bool is_vec_aligned(const void* ptr) {
  return reinterpret_cast<std::uintptr_t>(ptr) % kVecBytes == 0;
}

template <int kVecN, bool kUsePDL, typename Index, typename T, typename Op>
void launch_unary_map_impl(T* dst, const T* src, std::size_t n, Op op, DLDevice device) {
  constexpr auto kernel =
      device::elementwise::unary_map_kernel<kVecN, kUnroll, kUsePDL, Index, T, Op>;
  constexpr std::size_t kTileVecs = static_cast<std::size_t>(kBlockSize) * kUnroll;
  // Blocks stride over tiles, so a grid capped at kMaxGrid still covers everything.
  const std::size_t grid =
      std::min<std::size_t>(kMaxGrid, std::max<std::size_t>(1, div_ceil(n / kVecN, kTileVecs)));
  LaunchKernel(static_cast<unsigned>(grid), kBlockSize, device)
      .enable_pdl(kUsePDL)(kernel, dst, src, static_cast<Index>(n), op);
}

template <int kVecN, bool kUsePDL, typename T, typename Op>
void launch_unary_map_vec(T* dst, const T* src, std::size_t n, Op op, DLDevice device) {
  // uint32_t indexing while n plus one tile of slack fits (the tile loop may overshoot by one).
  constexpr std::size_t kSlack = static_cast<std::size_t>(kBlockSize) * kUnroll * kVecN;
  if (n + kSlack < (std::size_t{1} << 32)) {
    launch_unary_map_impl<kVecN, kUsePDL, std::uint32_t>(dst, src, n, op, device);
  } else {
    launch_unary_map_impl<kVecN, kUsePDL, std::uint64_t>(dst, src, n, op, device);
  }
}

/// dst[i] = op(src[i]) for i < n on the stream of `device`. n == 0 launches nothing.
template <bool kUsePDL, typename T, typename Op>
void launch_unary_map(T* dst, const T* src, std::size_t n, Op op, DLDevice device) {
  if (n == 0) return;
  constexpr int kVecN = static_cast<int>(kVecBytes / sizeof(T));
  if (is_vec_aligned(dst) && is_vec_aligned(src)) {
    launch_unary_map_vec<kVecN, kUsePDL>(dst, src, n, op, device);
  } else {
    launch_unary_map_vec<1, kUsePDL>(dst, src, n, op, device);
  }
}

}  // namespace host::elementwise
