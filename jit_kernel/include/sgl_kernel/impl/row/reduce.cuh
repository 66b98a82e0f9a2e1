// Row sums of the row kernels (sgl_kernel/impl/row/map.cuh): over an aligned group of lanes of
// one warp (group_sum), over a CTA (cta_sum, with CtaSumScratch / CtaSumSlots), over a decode CTA
// of at most 8 warps (WarpSums), and who owns which row (RowGroups, row_sum).
#pragma once

#include <sgl_kernel/shared_memory.cuh>  // For shared_address, store_shared, load_shared
#include <sgl_kernel/utils.cuh>          // For SGL_DEVICE, kWarpThreads, kFullMask
#include <sgl_kernel/vec.cuh>            // For AlignedVector

#include <cstdint>
#include <type_traits>

namespace device::row {

/// Sum over the aligned group of kGroup lanes (a power of two <= 32) holding `value`; every lane
/// of the group gets the same (bit-identical) result. All 32 lanes of the warp must call it.
template <std::uint32_t kGroup>
SGL_DEVICE float group_sum(float value) {
  static_assert(kGroup >= 1 && kGroup <= kWarpThreads && (kGroup & (kGroup - 1)) == 0,
                "group_sum: the group is a power of two of at most 32 lanes");
#pragma unroll
  for (std::uint32_t offset = kGroup / 2; offset > 0; offset /= 2) {
    value += __shfl_xor_sync(kFullMask, value, static_cast<int>(offset), kWarpThreads);
  }
  return value;
}

/// Shared memory of cta_sum: two buffers used alternately, so consecutive calls (one per row of
/// a loop) need one __syncthreads each. Declare it `__shared__`.
struct CtaSumScratch {
  float partial[2][kWarpThreads];
};

/// The two words of a CtaSumScratch buffer one thread touches in cta_sum, as shared-window
/// addresses: its warp's partial sum (lane 0 writes it) and the one this lane reads after the
/// barrier.
struct CtaSumSlots {
  std::uint32_t warp_partial;
  std::uint32_t lane_partial;

  /// The slots of buffer `call % 2` (see cta_sum for `call`).
  SGL_DEVICE CtaSumSlots(CtaSumScratch& scratch, std::uint32_t call)
      : warp_partial(shared_address(&scratch.partial[call & 1u][threadIdx.x / kWarpThreads])),
        lane_partial(shared_address(&scratch.partial[call & 1u][threadIdx.x % kWarpThreads])) {}

  /// Computes the addresses where this is called instead of at their use after the warp's sum:
  /// call it before the loads, so reading the CTA's shared window overlaps them rather than
  /// delaying the barrier (docs/kernels/norm.md, "Decode plan").
  SGL_DEVICE void compute_here() { asm volatile("" : "+r"(warp_partial), "+r"(lane_partial)); }
};

/// Sum over the CTA (blockDim.x a multiple of 32, at most 1024) with one __syncthreads (none for
/// a single warp); every thread gets the same result. Every thread of the CTA must call it the same
/// number of times, each call with the slots of the next buffer (CtaSumSlots(scratch, call) for
/// call = 0, 1, 2, ...).
///
/// Why two buffers suffice: call c writes buffer c % 2 before its barrier and reads it after. The
/// next write of that buffer (call c + 2) comes after the barrier of call c + 1, which every
/// thread reaches only after finishing its reads of call c.
SGL_DEVICE float cta_sum(float value, const CtaSumSlots& slots) {
  const std::uint32_t lane = threadIdx.x % kWarpThreads;
  value = group_sum<kWarpThreads>(value);
  if (blockDim.x == kWarpThreads) return value;  // one warp: no barrier, no shared memory
  if (lane == 0) store_shared(slots.warp_partial, value);
  __syncthreads();
  const std::uint32_t num_warps = blockDim.x / kWarpThreads;
  return group_sum<kWarpThreads>(lane < num_warps ? load_shared(slots.lane_partial) : 0.0f);
}

/// cta_sum for call number `call` (0, 1, 2, ...) of this thread, slots computed at the call.
SGL_DEVICE float cta_sum(float value, CtaSumScratch& scratch, std::uint32_t call) {
  return cta_sum(value, CtaSumSlots(scratch, call));
}

/// The row sum of a decode CTA (one row, blockDim.x a multiple of 32) of at most kWarps warps,
/// kWarps a power of two up to 8: lane 0 of each warp writes its warp's sum, and after one
/// barrier every thread reads all kWarps sums with vector loads and adds them in one fixed order
/// (the same bits everywhere). That replaces cta_sum's second shuffle tree, a chain of five
/// shuffles on the critical path (docs/kernels/norm.md, "Decode plan"). One warp: shuffles
/// only, no barrier. Declare it `__shared__`; every thread calls sum() once.
template <std::uint32_t kWarps>
struct WarpSums {
  static_assert(kWarps >= 1 && kWarps <= 8 && (kWarps & (kWarps - 1)) == 0,
                "WarpSums: a power of two of at most 8 warps");
  /// Sums read per vector load.
  static constexpr std::uint32_t kPerLoad = kWarps < 4 ? kWarps : 4;
  using Loaded = AlignedVector<float, kPerLoad>;

  alignas(Loaded::kBytes) float warp_sum[kWarps];

  SGL_DEVICE float sum(float value) {
    value = group_sum<kWarpThreads>(value);
    if constexpr (kWarps == 1) return value;
    const std::uint32_t tid = threadIdx.x;
    if (tid % kWarpThreads == 0) warp_sum[tid / kWarpThreads] = value;
    // A CTA of fewer than kWarps warps: warp 0 zeroes the sums that no warp writes.
    if (tid < kWarps && tid >= blockDim.x / kWarpThreads) warp_sum[tid] = 0.0f;
    __syncthreads();
    float sums[kWarps];
#pragma unroll
    for (std::uint32_t i = 0; i < kWarps / kPerLoad; ++i) {
      Loaded loaded;
      loaded.load(warp_sum, i);
#pragma unroll
      for (std::uint32_t j = 0; j < kPerLoad; ++j) sums[i * kPerLoad + j] = loaded[j];
    }
#pragma unroll
    for (std::uint32_t width = kWarps; width > 1; width /= 2) {
#pragma unroll
      for (std::uint32_t i = 0; i < width / 2; ++i) sums[i] = sums[2 * i] + sums[2 * i + 1];
    }
    return sums[0];
  }
};

/// Shared memory of a decode CTA's row sum: WarpSums<kWarps> for a CTA of at most kWarps (1, 2,
/// 4, 8) warps; cta_sum's CtaSumScratch for kWarps == 0 (up to 32 warps).
template <std::uint32_t kWarps>
using DecodeSumScratch =
    std::conditional_t<kWarps == 0, CtaSumScratch, WarpSums<(kWarps == 0 ? 1 : kWarps)>>;

/// What a thread of a decode CTA needs for its row sum, formed before its loads: cta_sum's slot
/// addresses (pinned there, CtaSumSlots::compute_here), or the WarpSums itself.
SGL_DEVICE CtaSumSlots decode_sum_slots(CtaSumScratch& scratch) {
  CtaSumSlots slots(scratch, 0);
  slots.compute_here();
  return slots;
}
template <std::uint32_t kWarps>
SGL_DEVICE WarpSums<kWarps>& decode_sum_slots(WarpSums<kWarps>& sums) {
  return sums;
}

/// The row's sum over a decode CTA, from what decode_sum_slots returned.
SGL_DEVICE float decode_row_sum(float value, const CtaSumSlots& slots) {
  return cta_sum(value, slots);
}
template <std::uint32_t kWarps>
SGL_DEVICE float decode_row_sum(float value, WarpSums<kWarps>& sums) {
  return sums.sum(value);
}

/// Who owns which row: groups of kGroup lanes (kGroup in 1..32), or the whole CTA (kGroup == 0).
template <std::uint32_t kGroup>
struct RowGroups {
  static constexpr bool kIsCta = kGroup == 0;

  /// Threads per row.
  SGL_DEVICE static std::uint32_t size() { return kIsCta ? blockDim.x : kGroup; }
  /// This thread's rank within its row's group.
  SGL_DEVICE static std::uint32_t rank() { return kIsCta ? threadIdx.x : threadIdx.x % kGroup; }
  /// This thread's group within the CTA.
  SGL_DEVICE static std::uint32_t index() { return kIsCta ? 0u : threadIdx.x / kGroup; }
  /// Rows per CTA.
  SGL_DEVICE static std::uint32_t per_cta() { return kIsCta ? 1u : blockDim.x / kGroup; }
};

/// The sum over the row's group: shuffles for a warp group, cta_sum for a CTA group.
template <std::uint32_t kGroup>
SGL_DEVICE float row_sum(float value, CtaSumScratch& scratch, std::uint32_t call) {
  if constexpr (kGroup == 0) {
    return cta_sum(value, scratch, call);
  } else {
    return group_sum<kGroup>(value);
  }
}

}  // namespace device::row
