// store_cache: k_cache[indices[i]] = k[i] and v_cache[indices[i]] = v[i], a row copy by bytes
// (any dtype). Out-of-range indices never write: unchecked, their rows are skipped; checked, the
// first one is reported as an error after the copy.
#include <sgl_kernel/tensor.h>     // For data_address, details::describe, dtype_name, device_name
#include <sgl_kernel/utils.h>      // For panic, DebugInfo, div_ceil, next_pow2, dtype_bytes
#include <sgl_kernel/vec_width.h>  // For widest_common_alignment, address_bits
#include <sgl_kernel/cache_hint.cuh>  // For cache::load_hinted, cache::Evict
#include <sgl_kernel/runtime.cuh>     // For runtime::get_sm_count, runtime::get_blocks_per_sm
#include <sgl_kernel/utils.cuh>  // For LaunchKernel, RuntimeDeviceCheck, SGL_DEVICE, PDLWaitPrimary, PDLTriggerSecondary
#include <sgl_kernel/vec.cuh>  // For AlignedVector

#include <cuda_runtime.h>
#include <dlpack/dlpack.h>
#include <tvm/ffi/container/tensor.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>

// Tuning knobs (compile-time; scripts/tune_kernels.py sweeps them, scripts/tune_kernels.md):
//   SGL_STORE_BLOCK       threads per block (a power of two, 64..1024)
//   SGL_STORE_UNROLL      vectors a thread loads before it stores any (1..16)
//   SGL_STORE_PERSISTENT  1: at most one wave of resident blocks striding over the rows;
//                         0: one lane group per row, grid = rows / groups per block;
//                         2: as 0, but rows of at most one vector per lane (<= 512 bytes at
//                         16-byte vectors) take the small-row plan: persistent 256-thread
//                         blocks, 4 vectors (the plan before tuning, faster on such rows)
//   SGL_STORE_SMALL_SPLIT 1: the small-row plan splits a row over fewer lanes, so that each
//                         holds up to SGL_STORE_SMALL_UNROLL vectors (a warp takes several
//                         rows at once); 0: one vector per lane (a warp per 512-byte row)
//   SGL_STORE_SMALL_UNROLL vectors per thread of the small-row plan (1..16)
//   SGL_STORE_SMALL_PERSISTENT 1: the small-row plan runs one wave of resident blocks striding
//                         over the rows; 0: one lane group per row
//   SGL_STORE_LOAD_HINT   k and v rows loaded evict-first (L1 and L2: they are read once):
//                         0 never; 1 always; 2 with 16-byte vectors when a k row plus a v row
//                         is at most kHintMaxRowBytes (2 KiB; larger rows measured faster
//                         without)
//   SGL_STORE_PDL_EARLY   1: with PDL, let the next kernel launch as soon as a block starts
//                         (after its griddepcontrol.wait) rather than when it ends; the next
//                         kernel still waits for this grid before touching memory
//   SGL_STORE_FEW_ROWS    N >= 1: when a warp per row would launch fewer than N blocks per SM
//                         (decode batches), each row is spread over more lanes, down to one
//                         vector per lane, until the grid has N blocks per SM; 0: a warp per row
#ifndef SGL_STORE_BLOCK
#define SGL_STORE_BLOCK 128
#endif
#ifndef SGL_STORE_UNROLL
#define SGL_STORE_UNROLL 8
#endif
#ifndef SGL_STORE_PERSISTENT
#define SGL_STORE_PERSISTENT 2
#endif
#ifndef SGL_STORE_SMALL_SPLIT
#define SGL_STORE_SMALL_SPLIT 1
#endif
#ifndef SGL_STORE_SMALL_UNROLL
#define SGL_STORE_SMALL_UNROLL 4
#endif
#ifndef SGL_STORE_SMALL_PERSISTENT
#define SGL_STORE_SMALL_PERSISTENT 1
#endif
#ifndef SGL_STORE_LOAD_HINT
#define SGL_STORE_LOAD_HINT 2
#endif
#ifndef SGL_STORE_PDL_EARLY
#define SGL_STORE_PDL_EARLY 0
#endif
#ifndef SGL_STORE_FEW_ROWS
#define SGL_STORE_FEW_ROWS 1
#endif

namespace {

inline constexpr int kStoreCacheBlock = SGL_STORE_BLOCK;    // threads per block
inline constexpr int kStoreCacheUnroll = SGL_STORE_UNROLL;  // vectors in flight per thread
inline constexpr int kStoreCachePersistent = SGL_STORE_PERSISTENT;
inline constexpr bool kStoreCachePDLEarly = SGL_STORE_PDL_EARLY != 0;
inline constexpr int kStoreCacheFewRows = SGL_STORE_FEW_ROWS;  // blocks per SM to reach
static_assert(kStoreCacheFewRows >= 0 && kStoreCacheFewRows <= 8, "SGL_STORE_FEW_ROWS: 0..8");
static_assert(SGL_STORE_LOAD_HINT >= 0 && SGL_STORE_LOAD_HINT <= 2,
              "SGL_STORE_LOAD_HINT: 0, 1 or 2");
inline constexpr int kStoreLoadHint = SGL_STORE_LOAD_HINT;
/// With SGL_STORE_LOAD_HINT=2: the largest k row plus v row whose loads are hinted.
inline constexpr std::uint32_t kHintMaxRowBytes = 2048;
static_assert(kStoreCacheBlock >= 64 && kStoreCacheBlock <= 1024 &&
                  (kStoreCacheBlock & (kStoreCacheBlock - 1)) == 0,
              "SGL_STORE_BLOCK must be a power of two in [64, 1024]");
static_assert(kStoreCacheUnroll >= 1 && kStoreCacheUnroll <= 16, "SGL_STORE_UNROLL: 1..16");
static_assert(kStoreCachePersistent >= 0 && kStoreCachePersistent <= 2,
              "SGL_STORE_PERSISTENT must be 0, 1 or 2");
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

/// The small-row plan of SGL_STORE_PERSISTENT=2: threads per block and vectors per thread.
inline constexpr int kSmallRowBlock = 256;
inline constexpr int kSmallRowUnroll = SGL_STORE_SMALL_UNROLL;
inline constexpr bool kSmallRowSplit = SGL_STORE_SMALL_SPLIT != 0;
inline constexpr bool kSmallRowPersistent = SGL_STORE_SMALL_PERSISTENT != 0;
static_assert(kSmallRowUnroll >= 1 && kSmallRowUnroll <= 16, "SGL_STORE_SMALL_UNROLL: 1..16");

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
/// k and v loads are evict-first (SGL_STORE_LOAD_HINT).
template <int kBlock, int kUnroll, int kVecBytes, typename Index, bool kUsePDL, bool kEvictFirst>
__global__ void __launch_bounds__(kBlock) store_cache_kernel(const StoreCacheParams p) {
  using vec_t = typename ByteVector<kVecBytes>::type;
  const std::uint32_t group_size = 1u << p.group_log2;
  // A group may span several blocks (SGL_STORE_FEW_ROWS): lanes count from the grid's start
  // (32-bit arithmetic is exact here: a group of at most 1024 lanes divides 2^32).
  const std::uint32_t lane = (blockIdx.x * kBlock + threadIdx.x) & (group_size - 1);
  const std::int64_t num_groups = (static_cast<std::int64_t>(gridDim.x) * kBlock) >> p.group_log2;
  std::int64_t row = (static_cast<std::int64_t>(blockIdx.x) * kBlock + threadIdx.x) >> p.group_log2;

  device::PDLWaitPrimary<kUsePDL>();  // indices, k and v may come from the previous kernel
  if constexpr (kStoreCachePDLEarly) device::PDLTriggerSecondary<kUsePDL>();

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

  if constexpr (!kStoreCachePDLEarly) device::PDLTriggerSecondary<kUsePDL>();
}

// ---------------------------------------------------------------- host side

/// Raises "store_cache: tensor '<name>' <what...>; tensor: shape=..., strides=..., ...".
template <typename... Args>
[[noreturn]] void fail_tensor(const tvm::ffi::TensorView& view,
                              const char* name,
                              const Args&... what) {
  host::panic(host::DebugInfo{},
              "store_cache: tensor '",
              name,
              "' ",
              what...,
              "; tensor: ",
              host::details::describe(view));
}

/// A tensor seen as rows: dim 0 counts the rows, the other dims (dense) form one row.
struct Rows {
  char* data;
  std::int64_t rows;
  std::int64_t row_bytes;
  std::int64_t stride_bytes;  // 0 when there is at most one row (the stride is meaningless)
};

inline Rows as_rows(const tvm::ffi::TensorView& view, const char* name, DLDevice device) {
  if (view.ndim() < 2) {
    fail_tensor(view, name, "must have at least 2 dims [rows, ...] but has ", view.ndim());
  }
  const DLDevice actual = view.device();
  if (actual.device_type != device.device_type || actual.device_id != device.device_id) {
    fail_tensor(view,
                name,
                "device mismatch: expected ",
                host::device_name(device),
                " (bound by 'k') but got ",
                host::device_name(actual));
  }
  const DLDataType dtype = view.dtype();
  if (dtype.bits % 8 != 0 || dtype.lanes != 1) {
    fail_tensor(view, name, "has dtype ", host::dtype_name(dtype), ", which is not whole bytes");
  }
  std::int64_t elements = 1;  // elements of one row; also the dense stride of the next dim
  for (std::int64_t dim = view.ndim() - 1; dim >= 1; --dim) {
    if (view.size(dim) != 1 && view.stride(dim) != elements) {
      fail_tensor(view,
                  name,
                  "must have contiguous rows (dims 1.. dense) but dim ",
                  dim,
                  " has stride ",
                  view.stride(dim),
                  " where ",
                  elements,
                  " was expected");
    }
    elements *= view.size(dim);
  }
  const auto elem_bytes = static_cast<std::int64_t>(host::dtype_bytes(dtype));
  const std::int64_t rows = view.size(0);
  return Rows{static_cast<char*>(host::data_address(view)),
              rows,
              elements * elem_bytes,
              rows > 1 ? view.stride(0) * elem_bytes : 0};
}

inline bool same_dtype(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

/// log2 of the lane group that holds a row of `vectors` vectors at most `per_lane` deep: the
/// smallest power of two >= ceil(vectors / per_lane), from 1 to 32 lanes (a warp).
inline std::uint32_t group_log2_for(std::uint32_t vectors, std::uint32_t per_lane) {
  const std::uint32_t lanes = std::clamp<std::uint32_t>(host::div_ceil(vectors, per_lane), 1, 32);
  return static_cast<std::uint32_t>(std::countr_zero(host::next_pow2(lanes)));
}

/// Validated arguments, ready to launch.
struct StoreCachePlan {
  StoreCacheParams params;
  DLDevice device;
  bool int64_indices;
  int vec_bytes;
};

inline StoreCachePlan plan_store_cache(const tvm::ffi::TensorView& k,
                                       const tvm::ffi::TensorView& v,
                                       const tvm::ffi::TensorView& k_cache,
                                       const tvm::ffi::TensorView& v_cache,
                                       const tvm::ffi::TensorView& indices) {
  using namespace host;
  const DLDevice device = k.device();
  if (device.device_type != kDLCUDA) {
    fail_tensor(k, "k", "device mismatch: expected cuda but got ", device_name(device));
  }
  const Rows k_rows = as_rows(k, "k", device);
  const Rows v_rows = as_rows(v, "v", device);
  const Rows kc_rows = as_rows(k_cache, "k_cache", device);
  const Rows vc_rows = as_rows(v_cache, "v_cache", device);

  if (!same_dtype(k_cache.dtype(), k.dtype())) {
    fail_tensor(k_cache,
                "k_cache",
                "dtype mismatch: expected ",
                dtype_name(k.dtype()),
                " (bound by 'k') but got ",
                dtype_name(k_cache.dtype()));
  }
  if (!same_dtype(v_cache.dtype(), v.dtype())) {
    fail_tensor(v_cache,
                "v_cache",
                "dtype mismatch: expected ",
                dtype_name(v.dtype()),
                " (bound by 'v') but got ",
                dtype_name(v_cache.dtype()));
  }
  if (kc_rows.row_bytes != k_rows.row_bytes) {
    fail_tensor(k_cache,
                "k_cache",
                "row size mismatch: its rows have ",
                kc_rows.row_bytes,
                " bytes but the rows of 'k' have ",
                k_rows.row_bytes);
  }
  if (vc_rows.row_bytes != v_rows.row_bytes) {
    fail_tensor(v_cache,
                "v_cache",
                "row size mismatch: its rows have ",
                vc_rows.row_bytes,
                " bytes but the rows of 'v' have ",
                v_rows.row_bytes);
  }
  if (v_rows.rows != k_rows.rows) {
    fail_tensor(v, "v", "shape mismatch at dim 0: expected ", k_rows.rows, " rows (as 'k')");
  }
  if (vc_rows.rows != kc_rows.rows) {
    fail_tensor(v_cache,
                "v_cache",
                "shape mismatch at dim 0: expected ",
                kc_rows.rows,
                " rows (as 'k_cache')");
  }
  // A k row plus a v row below 2 GiB keeps every vector index of a row within 31 bits.
  constexpr std::int64_t kMaxRowBytes = std::int64_t{1} << 31;
  if (k_rows.row_bytes + v_rows.row_bytes >= kMaxRowBytes) {
    fail_tensor(k,
                "k",
                "has rows too large: a k row (",
                k_rows.row_bytes,
                " bytes) plus a v row (",
                v_rows.row_bytes,
                " bytes) must be smaller than 2 GiB");
  }

  if (indices.ndim() != 1) {
    fail_tensor(
        indices, "indices", "rank mismatch: expected 1 dims [num_rows] but got ", indices.ndim());
  }
  if (indices.size(0) != k_rows.rows) {
    fail_tensor(indices,
                "indices",
                "shape mismatch at dim 0 ('num_rows'): expected ",
                k_rows.rows,
                " (the rows of 'k') but got ",
                indices.size(0));
  }
  const bool is_int64 = is_type<std::int64_t>(indices.dtype());
  if (!is_int64 && !is_type<std::int32_t>(indices.dtype())) {
    fail_tensor(indices,
                "indices",
                "dtype mismatch: expected one of [int32, int64] but got ",
                dtype_name(indices.dtype()));
  }
  const DLDevice index_device = indices.device();
  if (index_device.device_type != device.device_type ||
      index_device.device_id != device.device_id) {
    fail_tensor(indices,
                "indices",
                "device mismatch: expected ",
                device_name(device),
                " (bound by 'k') but got ",
                device_name(index_device));
  }

  // The widest vector aligned for every row start of all four tensors and for both row sizes.
  const auto vec_bytes = static_cast<int>(widest_common_alignment(kMaxVecBytes,
                                                                  {address_bits(k_rows.data),
                                                                   address_bits(v_rows.data),
                                                                   address_bits(kc_rows.data),
                                                                   address_bits(vc_rows.data),
                                                                   k_rows.stride_bytes,
                                                                   v_rows.stride_bytes,
                                                                   kc_rows.stride_bytes,
                                                                   vc_rows.stride_bytes,
                                                                   k_rows.row_bytes,
                                                                   v_rows.row_bytes}));
  const auto k_vecs = static_cast<std::uint32_t>(k_rows.row_bytes / vec_bytes);
  const auto row_vecs = static_cast<std::uint32_t>(k_vecs + v_rows.row_bytes / vec_bytes);
  // One warp for rows of >= 32 vectors (>= 512 B at 16 B), else the smallest power of two that
  // covers the row, so that short rows do not leave most lanes idle.
  const std::uint32_t group_log2 = group_log2_for(row_vecs, 1);

  StoreCacheParams params{};
  params.k = k_rows.data;
  params.v = v_rows.data;
  params.k_cache = kc_rows.data;
  params.v_cache = vc_rows.data;
  params.indices = data_address(indices);
  params.k_stride = k_rows.stride_bytes;
  params.v_stride = v_rows.stride_bytes;
  params.k_cache_stride = kc_rows.stride_bytes;
  params.v_cache_stride = vc_rows.stride_bytes;
  params.index_stride = indices.stride(0);
  params.num_rows = k_rows.rows;
  params.num_slots = kc_rows.rows;
  params.k_vecs = k_vecs;
  params.row_vecs = row_vecs;
  params.group_log2 = group_log2;
  params.error = nullptr;
  return StoreCachePlan{params, device, is_int64, vec_bytes};
}

/// One launch of the kBlock x kUnroll plan: at most one wave of resident blocks (persistent),
/// or one lane group per row.
template <int kBlock,
          int kUnroll,
          bool kPersistent,
          int kVecBytes,
          typename Index,
          bool kUsePDL,
          bool kEvictFirst>
void launch_store_plan(const StoreCacheParams& params, DLDevice device, bool use_pdl) {
  using namespace host;
  constexpr auto kernel =
      store_cache_kernel<kBlock, kUnroll, kVecBytes, Index, kUsePDL, kEvictFirst>;
  const std::int64_t wanted = div_ceil(params.num_rows << params.group_log2, std::int64_t{kBlock});
  if (wanted == 0) return;
  std::int64_t grid = std::min<std::int64_t>(wanted, 0x7fffffff);  // the loop strides beyond
  if constexpr (kPersistent) {
    const std::int64_t resident =
        static_cast<std::int64_t>(runtime::get_sm_count(device.device_id)) *
        runtime::get_blocks_per_sm(kernel, kBlock, 0, device.device_id);
    grid = std::max<std::int64_t>(1, std::min(wanted, resident));
  }
  LaunchKernel(static_cast<unsigned>(grid), kBlock, device).enable_pdl(use_pdl)(kernel, params);
}

/// launch_store_plan with the k/v loads evict-first where SGL_STORE_LOAD_HINT asks for it (1:
/// always; 2: 16-byte vectors and a k row plus a v row of at most kHintMaxRowBytes).
template <int kBlock, int kUnroll, bool kPersistent, int kVecBytes, typename Index, bool kUsePDL>
void launch_store_plan_hinted(const StoreCacheParams& params, DLDevice device, bool use_pdl) {
  if constexpr (kStoreLoadHint == 1 || (kStoreLoadHint == 2 && kVecBytes == 16)) {
    if (kStoreLoadHint == 1 || params.row_vecs * kVecBytes <= kHintMaxRowBytes) {
      return launch_store_plan<kBlock, kUnroll, kPersistent, kVecBytes, Index, kUsePDL, true>(
          params, device, use_pdl);
    }
  }
  launch_store_plan<kBlock, kUnroll, kPersistent, kVecBytes, Index, kUsePDL, false>(
      params, device, use_pdl);
}

/// SGL_STORE_FEW_ROWS: `params` with each row spread over more lanes (doubling the group, at
/// most one vector per lane and kMaxGroupLog2) while a grid of `block`-thread blocks would have
/// fewer than kStoreCacheFewRows blocks per SM (0: `params` unchanged). A decode batch of 16
/// rows of 4 KiB otherwise runs on 4 SMs.
inline StoreCacheParams spread_few_rows(const StoreCacheParams& params,
                                        int block,
                                        DLDevice device) {
  constexpr std::uint32_t kMaxGroupLog2 = 10;  // 1024 lanes: rows up to 16 KiB one vector deep
  const std::int64_t wanted_blocks =
      static_cast<std::int64_t>(host::runtime::get_sm_count(device.device_id)) * kStoreCacheFewRows;
  StoreCacheParams spread = params;
  while (spread.group_log2 < kMaxGroupLog2 && (1u << spread.group_log2) < params.row_vecs &&
         host::div_ceil(params.num_rows << spread.group_log2, std::int64_t{block}) <
             wanted_blocks) {
    ++spread.group_log2;
  }
  return spread;
}

template <int kVecBytes, typename Index, bool kUsePDL>
void launch_store_cache(const StoreCacheParams& params, DLDevice device, bool use_pdl) {
  constexpr int kBlock = kStoreCacheBlock;
  constexpr int kUnroll = kStoreCacheUnroll;
  if constexpr (kStoreCachePersistent == 2) {
    if (params.row_vecs <= (1u << params.group_log2)) {  // at most one vector per lane
      StoreCacheParams small = params;
      if constexpr (kSmallRowSplit)
        small.group_log2 = group_log2_for(params.row_vecs, kSmallRowUnroll);
      return launch_store_plan_hinted<kSmallRowBlock,
                                      kSmallRowUnroll,
                                      kSmallRowPersistent,
                                      kVecBytes,
                                      Index,
                                      kUsePDL>(small, device, use_pdl);
    }
  }
  // The persistent grid (SGL_STORE_PERSISTENT=1) is sized by residency, not by rows: no spread.
  constexpr bool kPersistent = kStoreCachePersistent == 1;
  launch_store_plan_hinted<kBlock, kUnroll, kPersistent, kVecBytes, Index, kUsePDL>(
      kPersistent ? params : spread_few_rows(params, kBlock, device), device, use_pdl);
}

template <typename Index, bool kUsePDL>
void dispatch_width(const StoreCachePlan& plan, bool use_pdl) {
  switch (plan.vec_bytes) {
    case 16:
      return launch_store_cache<16, Index, kUsePDL>(plan.params, plan.device, use_pdl);
    case 8:
      return launch_store_cache<8, Index, kUsePDL>(plan.params, plan.device, use_pdl);
    case 4:
      return launch_store_cache<4, Index, kUsePDL>(plan.params, plan.device, use_pdl);
    case 2:
      return launch_store_cache<2, Index, kUsePDL>(plan.params, plan.device, use_pdl);
    default:
      return launch_store_cache<1, Index, kUsePDL>(plan.params, plan.device, use_pdl);
  }
}

template <bool kUsePDL>
void run_store_cache(const StoreCachePlan& plan, bool use_pdl) {
  if (plan.int64_indices) {
    dispatch_width<std::int64_t, kUsePDL>(plan, use_pdl);
  } else {
    dispatch_width<std::int32_t, kUsePDL>(plan, use_pdl);
  }
}

/// k_cache[indices[i]] = k[i], v_cache[indices[i]] = v[i] for every i with
/// 0 <= indices[i] < k_cache.size(0); rows with another index are skipped (nothing written).
/// k, v, k_cache, v_cache: rank >= 2, dim 0 the rows (any stride), the other dims dense; k_cache
/// has k's dtype and row size, v_cache v's; both caches have the same number of rows. indices:
/// int32/int64 [num_rows], any stride. All on one CUDA device.
template <bool kUsePDL>
void store_cache(tvm::ffi::TensorView k,
                 tvm::ffi::TensorView v,
                 tvm::ffi::TensorView k_cache,
                 tvm::ffi::TensorView v_cache,
                 tvm::ffi::TensorView indices) {
  const StoreCachePlan plan = plan_store_cache(k, v, k_cache, v_cache, indices);
  run_store_cache<kUsePDL>(plan, kUsePDL);
}

/// store_cache, then a check: if any index was out of range, raises an error naming the first
/// such row, its index and the cache size (the in-range rows are stored all the same). `error` is
/// an int64 [2] scratch tensor on the same device. Synchronizes the stream; not capturable.
template <bool kUsePDL>
void store_cache_checked(tvm::ffi::TensorView k,
                         tvm::ffi::TensorView v,
                         tvm::ffi::TensorView k_cache,
                         tvm::ffi::TensorView v_cache,
                         tvm::ffi::TensorView indices,
                         tvm::ffi::TensorView error) {
  using namespace host;
  StoreCachePlan plan = plan_store_cache(k, v, k_cache, v_cache, indices);
  const DLDevice error_device = error.device();
  if (!is_type<std::int64_t>(error.dtype()) || error.ndim() != 1 || error.size(0) != 2 ||
      !error.is_contiguous() || error_device.device_type != plan.device.device_type ||
      error_device.device_id != plan.device.device_id) {
    fail_tensor(
        error, "error", "must be a contiguous int64 [2] tensor on ", device_name(plan.device));
  }
  if (plan.params.num_rows == 0) return;

  const cudaStream_t stream = LaunchKernel::resolve_device(plan.device);
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  RuntimeDeviceCheck(cudaStreamIsCapturing(stream, &capture));
  if (capture != cudaStreamCaptureStatusNone) {
    panic(DebugInfo{},
          "store_cache: checked=True synchronizes the stream to read the result back and cannot "
          "run inside CUDA graph capture; capture with checked=False (out-of-range rows are "
          "skipped)");
  }
  auto* slots = static_cast<unsigned long long*>(data_address(error));
  RuntimeDeviceCheck(cudaMemsetAsync(slots, 0xff, sizeof(unsigned long long), stream));
  RuntimeDeviceCheck(cudaMemsetAsync(slots + 1, 0, sizeof(unsigned long long), stream));
  plan.params.error = slots;
  run_store_cache<kUsePDL>(plan, /*use_pdl=*/false);  // the memsets must finish first

  unsigned long long found[2] = {0, 0};
  RuntimeDeviceCheck(cudaMemcpyAsync(found, slots, sizeof(found), cudaMemcpyDeviceToHost, stream));
  RuntimeDeviceCheck(cudaStreamSynchronize(stream));
  if (found[1] == 0) return;

  const auto row = static_cast<std::int64_t>(found[0]);
  const char* entry = static_cast<const char*>(plan.params.indices) +
                      row * plan.params.index_stride * (plan.int64_indices ? 8 : 4);
  std::int64_t value = 0;
  std::int32_t narrow = 0;
  void* target = plan.int64_indices ? static_cast<void*>(&value) : static_cast<void*>(&narrow);
  const std::size_t bytes = plan.int64_indices ? sizeof(value) : sizeof(narrow);
  RuntimeDeviceCheck(cudaMemcpyAsync(target, entry, bytes, cudaMemcpyDeviceToHost, stream));
  RuntimeDeviceCheck(cudaStreamSynchronize(stream));
  if (!plan.int64_indices) value = narrow;
  const std::int64_t more = static_cast<std::int64_t>(found[1]) - 1;
  panic(DebugInfo{},
        "store_cache: indices[",
        row,
        "] = ",
        value,
        " is out of range for k_cache/v_cache with ",
        plan.params.num_slots,
        " rows (valid: 0 <= index < ",
        plan.params.num_slots,
        ")",
        more > 0 ? " and " + std::to_string(more) + " more out-of-range indices" : std::string{},
        "; rows with in-range indices were stored, the others were skipped");
}

}  // namespace
