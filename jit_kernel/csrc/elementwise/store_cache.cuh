// store_cache: k_cache[indices[i]] = k[i] and v_cache[indices[i]] = v[i], a row copy by bytes
// (any dtype). Out-of-range indices never write: unchecked, their rows are skipped; checked, the
// first one is reported as an error after the copy.
#include <sgl_kernel/tensor.h>  // For TensorMatcher, SymbolicSize, SymbolicDType, SymbolicDevice, data_address
#include <sgl_kernel/utils.h>  // For RuntimeCheck, panic, DebugInfo, div_ceil, next_pow2, dtype_bytes
#include <sgl_kernel/vec_width.h>  // For widest_common_alignment, address_bits
#include <sgl_kernel/runtime.cuh>  // For runtime::get_sm_count, runtime::get_blocks_per_sm
#include <sgl_kernel/utils.cuh>  // For LaunchKernel, RuntimeDeviceCheck, SGL_DEVICE, PDLWaitPrimary, PDLTriggerSecondary

#include <cuda_runtime.h>
#include <dlpack/dlpack.h>
#include <tvm/ffi/container/tensor.h>

#include "store_cache_kernel.cuh"  // store_cache_kernel, StoreCacheParams, kMaxVecBytes

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace {

/// The launch shapes of store_cache; the defaults ship.
///   kBlock, kUnroll            the row plan: threads per block, vectors a thread loads before
///                              it stores any (one lane group per row, grid = rows / groups)
///   kSmallBlock, kSmallUnroll  the small-row plan (rows of at most one vector per lane of a
///                              warp): a persistent grid, each row split over lanes holding up
///                              to kSmallUnroll vectors
///   kHintMaxRowBytes           16-byte copies of a k row plus a v row of at most this many
///                              bytes load evict-first (larger rows are faster without)
///   kSpreadBlocksPerSm         the row plan spreads each row over more lanes while its grid
///                              has fewer blocks than this per SM (decode batches)
///   kDecodeMaxVectors          16-byte copies of at most this many vectors (decode batches: 64
///                              rows of 2 KiB k + v) take the decode plan: one vector a thread
template <int kBlock_ = 128,
          int kUnroll_ = 8,
          int kSmallBlock_ = 256,
          int kSmallUnroll_ = 4,
          int kHintMaxRowBytes_ = 2048,
          int kSpreadBlocksPerSm_ = 1,
          int kDecodeMaxVectors_ = 1 << 15>
struct StoreCacheConfig {
  static constexpr std::int64_t kDecodeMaxVectors = kDecodeMaxVectors_;
  static constexpr int kBlock = kBlock_;
  static constexpr int kUnroll = kUnroll_;
  static constexpr int kSmallBlock = kSmallBlock_;
  static constexpr int kSmallUnroll = kSmallUnroll_;
  static constexpr std::uint32_t kHintMaxRowBytes = kHintMaxRowBytes_;
  static constexpr int kSpreadBlocksPerSm = kSpreadBlocksPerSm_;
  static_assert(kBlock >= 64 && kBlock <= 1024 && (kBlock & (kBlock - 1)) == 0,
                "StoreCacheConfig: kBlock must be a power of two in [64, 1024]");
  static_assert(kSmallBlock >= 64 && kSmallBlock <= 1024 && (kSmallBlock & (kSmallBlock - 1)) == 0,
                "StoreCacheConfig: kSmallBlock must be a power of two in [64, 1024]");
  static_assert(kUnroll >= 1 && kUnroll <= 16, "StoreCacheConfig: kUnroll: 1..16");
  static_assert(kSmallUnroll >= 1 && kSmallUnroll <= 16, "StoreCacheConfig: kSmallUnroll: 1..16");
  static_assert(kHintMaxRowBytes_ >= 0, "StoreCacheConfig: kHintMaxRowBytes must be >= 0");
  static_assert(kSpreadBlocksPerSm >= 1 && kSpreadBlocksPerSm <= 8,
                "StoreCacheConfig: kSpreadBlocksPerSm: 1..8");
};

// ---------------------------------------------------------------- host side

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

namespace validate {

/// Checks the arguments and lays out the copy. Named store_cache so that every message starts
/// with "store_cache:". Rows: dim 0 of any stride, dims 1.. dense (TensorMatcher::rows).
inline StoreCachePlan store_cache(const tvm::ffi::TensorView& k,
                                  const tvm::ffi::TensorView& v,
                                  const tvm::ffi::TensorView& k_cache,
                                  const tvm::ffi::TensorView& v_cache,
                                  const tvm::ffi::TensorView& indices) {
  using namespace host;
  auto rows = SymbolicSize{"num_rows"};
  auto slots = SymbolicSize{"num_slots"};
  auto k_row = SymbolicSize{"k_row_elems"};
  auto v_row = SymbolicSize{"v_row_elems"};
  auto k_stride = SymbolicSize{"k_stride"};
  auto v_stride = SymbolicSize{"v_stride"};
  auto k_cache_stride = SymbolicSize{"k_cache_stride"};
  auto v_cache_stride = SymbolicSize{"v_cache_stride"};
  auto index_stride = SymbolicSize{"index_stride"};
  auto k_dtype = SymbolicDType{};
  auto v_dtype = SymbolicDType{};
  auto device = SymbolicDevice{};
  TensorMatcher::rows(rows, k_row, k_stride)
      .with_dtype(k_dtype)
      .with_device<kDLCUDA>(device)
      .verify(k, "k");
  TensorMatcher::rows(rows, v_row, v_stride).with_dtype(v_dtype).with_device(device).verify(v, "v");
  TensorMatcher::rows(slots, k_row, k_cache_stride)
      .with_dtype(k_dtype)
      .with_device(device)
      .verify(k_cache, "k_cache");
  TensorMatcher::rows(slots, v_row, v_cache_stride)
      .with_dtype(v_dtype)
      .with_device(device)
      .verify(v_cache, "v_cache");
  TensorMatcher({rows})  //
      .with_strides({index_stride})
      .with_dtype<std::int32_t, std::int64_t>()
      .with_device(device)
      .verify(indices, "indices");

  for (const auto& [view, name] : {std::pair{&k, "k"}, std::pair{&v, "v"}}) {
    const DLDataType dtype = view->dtype();
    if (dtype.bits % 8 != 0 || dtype.lanes != 1) [[unlikely]] {  // message built on failure only
      panic(DebugInfo{},
            "store_cache: tensor '",
            name,
            "' has dtype ",
            dtype_name(dtype),
            ", which is not whole bytes; tensor: ",
            details::describe(*view));
    }
  }
  const auto k_bytes = static_cast<std::int64_t>(dtype_bytes(k.dtype()));
  const auto v_bytes = static_cast<std::int64_t>(dtype_bytes(v.dtype()));
  const std::int64_t k_row_bytes = k_row.unwrap() * k_bytes;
  const std::int64_t v_row_bytes = v_row.unwrap() * v_bytes;
  // A k row plus a v row below 2 GiB keeps every vector index of a row within 31 bits.
  RuntimeCheck(k_row_bytes + v_row_bytes < (std::int64_t{1} << 31),
               "store_cache: a k row (",
               k_row_bytes,
               " bytes) plus a v row (",
               v_row_bytes,
               " bytes) must be smaller than 2 GiB");

  const std::int64_t num_rows = rows.unwrap();
  const std::int64_t num_slots = slots.unwrap();
  // Row strides in bytes; 0 where a tensor has at most one row (its stride is meaningless).
  const auto stride_bytes = [](const SymbolicSize& stride, std::int64_t count, std::int64_t size) {
    return count > 1 ? stride.unwrap() * size : std::int64_t{0};
  };
  StoreCacheParams params{};
  params.k = static_cast<const char*>(data_address(k));
  params.v = static_cast<const char*>(data_address(v));
  params.k_cache = static_cast<char*>(data_address(k_cache));
  params.v_cache = static_cast<char*>(data_address(v_cache));
  params.indices = data_address(indices);
  params.k_stride = stride_bytes(k_stride, num_rows, k_bytes);
  params.v_stride = stride_bytes(v_stride, num_rows, v_bytes);
  params.k_cache_stride = stride_bytes(k_cache_stride, num_slots, k_bytes);
  params.v_cache_stride = stride_bytes(v_cache_stride, num_slots, v_bytes);
  params.index_stride = index_stride.unwrap();
  params.num_rows = num_rows;
  params.num_slots = num_slots;

  // The widest vector aligned for every row start of all four tensors and for both row sizes.
  const auto vec_bytes = static_cast<int>(widest_common_alignment(kMaxVecBytes,
                                                                  {address_bits(params.k),
                                                                   address_bits(params.v),
                                                                   address_bits(params.k_cache),
                                                                   address_bits(params.v_cache),
                                                                   params.k_stride,
                                                                   params.v_stride,
                                                                   params.k_cache_stride,
                                                                   params.v_cache_stride,
                                                                   k_row_bytes,
                                                                   v_row_bytes}));
  params.k_vecs = static_cast<std::uint32_t>(k_row_bytes / vec_bytes);
  params.row_vecs = static_cast<std::uint32_t>(params.k_vecs + v_row_bytes / vec_bytes);
  // One warp for rows of >= 32 vectors (>= 512 B at 16 B), else the smallest power of two that
  // covers the row, so that short rows do not leave most lanes idle.
  params.group_log2 = group_log2_for(params.row_vecs, 1);
  params.error = nullptr;
  return StoreCachePlan{params, device.unwrap(), is_type<std::int64_t>(indices.dtype()), vec_bytes};
}

}  // namespace validate

/// The row plan's lane groups, each row spread over more lanes (doubling the group, at most one
/// vector per lane and 1024 lanes) while the grid would have fewer than kSpreadBlocksPerSm
/// blocks per SM: a decode batch of 16 rows of 4 KiB otherwise runs on 4 SMs.
template <typename Config>
std::uint32_t spread_group_log2(const StoreCacheParams& params, DLDevice device) {
  constexpr std::uint32_t kMaxGroupLog2 = 10;
  const std::int64_t wanted_blocks =
      static_cast<std::int64_t>(host::runtime::get_sm_count(device.device_id)) *
      Config::kSpreadBlocksPerSm;
  std::uint32_t log2 = params.group_log2;
  while (log2 < kMaxGroupLog2 && (1u << log2) < params.row_vecs &&
         host::div_ceil(params.num_rows << log2, std::int64_t{Config::kBlock}) < wanted_blocks) {
    ++log2;
  }
  return log2;
}

/// One launch of the kBlock x kUnroll plan: at most one wave of resident blocks (kPersistent),
/// or one lane group per row. 16-byte copies of rows of at most `hint_max_row_bytes` (k + v)
/// load evict-first.
template <int kBlock, int kUnroll, bool kPersistent, int kVecBytes, typename Index, bool kUsePDL>
void launch_store_plan(const StoreCacheParams& params,
                       std::uint32_t hint_max_row_bytes,
                       DLDevice device,
                       bool use_pdl) {
  using namespace host;
  const auto launch = [&](auto kernel) {
    const std::int64_t wanted =
        div_ceil(params.num_rows << params.group_log2, std::int64_t{kBlock});
    if (wanted == 0) return;
    std::int64_t grid = std::min<std::int64_t>(wanted, 0x7fffffff);  // the loop strides beyond
    if constexpr (kPersistent) {
      const std::int64_t resident =
          static_cast<std::int64_t>(runtime::get_sm_count(device.device_id)) *
          runtime::get_blocks_per_sm(kernel, kBlock, 0, device.device_id);
      grid = std::max<std::int64_t>(1, std::min(wanted, resident));
    }
    LaunchKernel(static_cast<unsigned>(grid), kBlock, device).enable_pdl(use_pdl)(kernel, params);
  };
  if constexpr (kVecBytes == 16) {
    if (params.row_vecs * kVecBytes <= hint_max_row_bytes) {
      return launch(store_cache_kernel<kBlock, kUnroll, kVecBytes, Index, kUsePDL, true>);
    }
  }
  launch(store_cache_kernel<kBlock, kUnroll, kVecBytes, Index, kUsePDL, false>);
}

/// The decode plan: blocks of kBlock threads, (along a row) x (rows), one vector per thread.
template <int kBlock, bool kUsePDL>
void launch_decode_plan(const StoreCachePlan& plan, bool use_pdl) {
  using namespace host;
  const StoreCacheParams& params = plan.params;
  if (params.num_rows == 0) return;
  const auto along =
      static_cast<std::uint32_t>(std::min<std::int64_t>(kBlock, next_pow2(params.row_vecs)));
  const std::uint32_t across = kBlock / along;
  const dim3 grid(div_ceil(params.row_vecs, along),
                  static_cast<std::uint32_t>(div_ceil(params.num_rows, std::int64_t{across})));
  const auto kernel = plan.int64_indices ? store_cache_decode_kernel<std::int64_t, kUsePDL>
                                         : store_cache_decode_kernel<std::int32_t, kUsePDL>;
  LaunchKernel(grid, dim3(along, across), plan.device).enable_pdl(use_pdl)(kernel, params);
}

/// The plan choice: 16-byte copies of decode batches take the decode plan; rows of at most one
/// vector per lane take the small-row plan (a persistent grid, rows split over fewer lanes); the
/// others the row plan, spread for few rows.
template <typename Config, bool kUsePDL>
void run_store_cache(StoreCachePlan plan, bool use_pdl) {
  StoreCacheParams& params = plan.params;
  if (plan.vec_bytes == 16 && params.row_vecs > 0 &&
      params.num_rows * params.row_vecs <= Config::kDecodeMaxVectors) {
    return launch_decode_plan<Config::kBlock, kUsePDL>(plan, use_pdl);
  }
  const bool small = params.row_vecs <= (1u << params.group_log2);
  params.group_log2 = small ? group_log2_for(params.row_vecs, Config::kSmallUnroll)
                            : spread_group_log2<Config>(params, plan.device);
  const auto launch = [&]<int kVecBytes, typename Index>() {
    constexpr std::uint32_t kHint = Config::kHintMaxRowBytes;
    if (small) {
      launch_store_plan<Config::kSmallBlock, Config::kSmallUnroll, true, kVecBytes, Index, kUsePDL>(
          params, kHint, plan.device, use_pdl);
    } else {
      launch_store_plan<Config::kBlock, Config::kUnroll, false, kVecBytes, Index, kUsePDL>(
          params, kHint, plan.device, use_pdl);
    }
  };
  const auto by_width = [&]<typename Index>() {
    switch (plan.vec_bytes) {
      case 16:
        return launch.template operator()<16, Index>();
      case 8:
        return launch.template operator()<8, Index>();
      case 4:
        return launch.template operator()<4, Index>();
      case 2:
        return launch.template operator()<2, Index>();
      default:
        return launch.template operator()<1, Index>();
    }
  };
  if (plan.int64_indices) {
    by_width.template operator()<std::int64_t>();
  } else {
    by_width.template operator()<std::int32_t>();
  }
}

/// k_cache[indices[i]] = k[i], v_cache[indices[i]] = v[i] for every i with
/// 0 <= indices[i] < k_cache.size(0); rows with another index are skipped (nothing written).
/// k, v, k_cache, v_cache: rank >= 2, dim 0 the rows (any stride), the other dims dense; k_cache
/// has k's dtype and row size, v_cache v's; both caches have the same number of rows. indices:
/// int32/int64 [num_rows], any stride. All on one CUDA device.
template <bool kUsePDL, typename Config = StoreCacheConfig<>>
void store_cache(tvm::ffi::TensorView k,
                 tvm::ffi::TensorView v,
                 tvm::ffi::TensorView k_cache,
                 tvm::ffi::TensorView v_cache,
                 tvm::ffi::TensorView indices) {
  run_store_cache<Config, kUsePDL>(validate::store_cache(k, v, k_cache, v_cache, indices), kUsePDL);
}

/// store_cache, then a check: if any index was out of range, raises an error naming the first
/// such row, its index and the cache size (the in-range rows are stored all the same). `error` is
/// an int64 [2] scratch tensor on the same device. Synchronizes the stream; not capturable.
template <bool kUsePDL, typename Config = StoreCacheConfig<>>
void store_cache_checked(tvm::ffi::TensorView k,
                         tvm::ffi::TensorView v,
                         tvm::ffi::TensorView k_cache,
                         tvm::ffi::TensorView v_cache,
                         tvm::ffi::TensorView indices,
                         tvm::ffi::TensorView error) {
  using namespace host;
  StoreCachePlan plan = validate::store_cache(k, v, k_cache, v_cache, indices);
  auto device = SymbolicDevice{};
  device.set_value(plan.device);
  TensorMatcher({2}).with_dtype<std::int64_t>().with_device(device).verify(error, "error");
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
  run_store_cache<Config, kUsePDL>(plan, /*use_pdl=*/false);  // the memsets must finish first

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
