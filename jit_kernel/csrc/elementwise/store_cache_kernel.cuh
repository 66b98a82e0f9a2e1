// The store_cache kernel: a lane group per row copies the k row and the v row to their cache
// slot as one sequence of vectors. The plans and checks are in store_cache.cuh.
#pragma once

#include <sgl_kernel/cache_hint.cuh>  // For cache::load_hinted, cache::Evict
#include <sgl_kernel/utils.cuh>       // For SGL_DEVICE, PDLWaitPrimary, PDLTriggerSecondary
#include <sgl_kernel/vec.cuh>         // For AlignedVector

#include <cstdint>

namespace {

inline constexpr std::int64_t kMaxVecBytes = 16;

/// Everything the kernel needs; byte strides, so any dtype copies the same way.
struct StoreCacheParams {
  const char* k;
  const char* v;
  char* k_cache;
  char* v_cache;
  const void* indices;
  std::int64_t k_stride;        // bytes between consecutive rows of k
  std::int64_t v_stride;        // ... of v
  std::int64_t k_cache_stride;  // ... of k_cache
  std::int64_t v_cache_stride;  // ... of v_cache
  std::int64_t index_stride;    // elements between consecutive entries of indices
  std::int64_t num_rows;        // rows of k and v (= entries of indices)
  std::int64_t num_slots;       // rows of k_cache and v_cache
  std::uint32_t k_vecs;         // vectors in one k row
  std::uint32_t row_vecs;       // vectors in one k row plus one v row
  std::uint32_t group_log2;     // a row is copied by 1 << group_log2 consecutive threads
  unsigned long long* error;    // checked mode: {first bad row, bad row count}; else nullptr
};

/// An unsigned vector of kBytes bytes (the copy never looks at the values).
template <int kBytes>
struct ByteVector;
template <>
struct ByteVector<16> {
  using type = device::AlignedVector<std::uint32_t, 4>;
};
template <>
struct ByteVector<8> {
  using type = device::AlignedVector<std::uint32_t, 2>;
};
template <>
struct ByteVector<4> {
  using type = device::AlignedVector<std::uint32_t, 1>;
};
template <>
struct ByteVector<2> {
  using type = device::AlignedVector<std::uint16_t, 1>;
};
template <>
struct ByteVector<1> {
  using type = device::AlignedVector<std::uint8_t, 1>;
};

/// Vector `index` of the row at `row`, evict-first in L1 and L2 when kEvictFirst.
template <bool kEvictFirst, typename Vec>
SGL_DEVICE void load_vector(Vec& out, const void* row, std::uint32_t index) {
  constexpr auto kPolicy =
      kEvictFirst ? device::cache::Evict::kFirst : device::cache::Evict::kNormal;
  device::cache::load_hinted<kPolicy>(out, static_cast<const Vec*>(row) + index);
}

/// Vectors first, first + group, ... (kUnroll of them) of the row that is k's row followed by
/// v's row; those past the end are left alone. kEvictFirst: see load_vector.
template <int kUnroll, bool kEvictFirst, typename Vec>
SGL_DEVICE void load_row_vectors(Vec (&data)[kUnroll],
                                 const void* k_src,
                                 const void* v_src,
                                 std::uint32_t first,
                                 std::uint32_t group,
                                 std::uint32_t k_vecs,
                                 std::uint32_t row_vecs) {
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const std::uint32_t i = first + u * group;
    if (i < k_vecs) {
      load_vector<kEvictFirst>(data[u], k_src, i);
    } else if (i < row_vecs) {
      load_vector<kEvictFirst>(data[u], v_src, i - k_vecs);
    }
  }
}

template <int kUnroll, typename Vec>
SGL_DEVICE void store_row_vectors(const Vec (&data)[kUnroll],
                                  void* k_dst,
                                  void* v_dst,
                                  std::uint32_t first,
                                  std::uint32_t group,
                                  std::uint32_t k_vecs,
                                  std::uint32_t row_vecs) {
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const std::uint32_t i = first + u * group;
    if (i < k_vecs) {
      data[u].store(k_dst, i);
    } else if (i < row_vecs) {
      data[u].store(v_dst, i - k_vecs);
    }
  }
}

/// A group of 1 << group_log2 threads copies one row i: it loads indices[i] once (together with
/// the row's first vectors, which do not depend on it), skips the row when the index is outside
/// [0, num_slots) (recording it in checked mode), then copies the k row and the v row as one
/// sequence of kVecBytes vectors, kUnroll loads in flight per thread. Groups stride
/// over the rows (persistent: the grid is at most one wave of resident blocks). kEvictFirst: the
/// k and v loads are evict-first.
template <int kBlock, int kUnroll, int kVecBytes, typename Index, bool kUsePDL, bool kEvictFirst>
__global__ void __launch_bounds__(kBlock) store_cache_kernel(const StoreCacheParams p) {
  using vec_t = typename ByteVector<kVecBytes>::type;
  const std::uint32_t group_size = 1u << p.group_log2;
  // A group may span several blocks (spread rows): lanes count from the grid's start
  // (32-bit arithmetic is exact here: a group of at most 1024 lanes divides 2^32).
  const std::uint32_t lane = (blockIdx.x * kBlock + threadIdx.x) & (group_size - 1);
  const std::int64_t num_groups = (static_cast<std::int64_t>(gridDim.x) * kBlock) >> p.group_log2;
  std::int64_t row = (static_cast<std::int64_t>(blockIdx.x) * kBlock + threadIdx.x) >> p.group_log2;

  device::PDLWaitPrimary<kUsePDL>();  // indices, k and v may come from the previous kernel

  for (; row < p.num_rows; row += num_groups) {
    const auto slot =
        static_cast<std::int64_t>(static_cast<const Index*>(p.indices)[row * p.index_stride]);
    const void* k_src = p.k + row * p.k_stride;
    const void* v_src = p.v + row * p.v_stride;
    // The first vectors do not depend on the index: their loads are in flight with its load.
    vec_t data[kUnroll];
    std::uint32_t first = lane;
    load_row_vectors<kUnroll, kEvictFirst>(
        data, k_src, v_src, first, group_size, p.k_vecs, p.row_vecs);
    if (slot < 0 || slot >= p.num_slots) {
      if (p.error != nullptr && lane == 0) {
        atomicMin(&p.error[0], static_cast<unsigned long long>(row));
        atomicAdd(&p.error[1], 1ull);
      }
      continue;
    }
    void* k_dst = p.k_cache + slot * p.k_cache_stride;
    void* v_dst = p.v_cache + slot * p.v_cache_stride;
    while (true) {
      store_row_vectors(data, k_dst, v_dst, first, group_size, p.k_vecs, p.row_vecs);
      first += group_size * kUnroll;
      if (first >= p.row_vecs) break;
      load_row_vectors<kUnroll, kEvictFirst>(
          data, k_src, v_src, first, group_size, p.k_vecs, p.row_vecs);
    }
  }

  device::PDLTriggerSecondary<kUsePDL>();
}

/// The decode plan (16-byte vectors): thread (x, y) of block (bx, by) copies vector
/// bx * blockDim.x + x of the k row followed by the v row of row by * blockDim.y + y, and
/// nothing else (the grid covers every vector once): one index load, one vector load, one store.
template <typename Index, bool kUsePDL>
__global__ void store_cache_decode_kernel(const StoreCacheParams p) {
  using vec_t = typename ByteVector<16>::type;
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  const std::uint32_t row = blockIdx.y * blockDim.y + threadIdx.y;  // rows < 2^31 (the caller)
  if (i >= p.row_vecs || row >= p.num_rows) return;

  device::PDLWaitPrimary<kUsePDL>();  // indices, k and v may come from the previous kernel
  const auto slot =
      static_cast<std::int64_t>(static_cast<const Index*>(p.indices)[row * p.index_stride]);
  const bool in_k = i < p.k_vecs;
  const std::uint32_t index = in_k ? i : i - p.k_vecs;
  const void* src = in_k ? p.k + row * p.k_stride : p.v + row * p.v_stride;
  vec_t data;
  data.load(src, index);
  device::PDLTriggerSecondary<kUsePDL>();  // the next kernel's wait still waits for the stores
  if (slot < 0 || slot >= p.num_slots) {
    if (p.error != nullptr && i == 0) {
      atomicMin(&p.error[0], static_cast<unsigned long long>(row));
      atomicAdd(&p.error[1], 1ull);
    }
    return;
  }
  void* dst = in_k ? p.k_cache + slot * p.k_cache_stride : p.v_cache + slot * p.v_cache_stride;
  data.store(dst, index);
}

}  // namespace
