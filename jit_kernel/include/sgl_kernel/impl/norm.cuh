// RMSNorm building blocks for fp16/bf16 rows held in registers: 16-byte packs, per-thread row
// slices, group (sub-warp / warp) and CTA sum reductions, the fp32 RMS scale, and the host-side
// launch plan that picks threads-per-row and packs-per-thread from the runtime row length.
//
// A row of D elements is D / 8 packs of 16 bytes. A group of G threads owns one row: thread r of
// the group holds packs r, r + G, ..., r + (kPacks - 1) * G (coalesced: consecutive threads read
// consecutive 16-byte packs). G is a compile-time 4..32 (lanes of one warp, several rows per CTA,
// shuffle reduction) or 0 = the whole CTA (one row per CTA, blockDim.x threads, shared-memory
// reduction). The row is read once, reduced in fp32, scaled and written from registers.
#pragma once

#include <sgl_kernel/cp_async.cuh>       // For cp_async::copy16, cp_async::wait_all
#include <sgl_kernel/runtime.cuh>        // For runtime::get_sm_count
#include <sgl_kernel/shared_memory.cuh>  // For shared_address, store_shared, load_shared
#include <sgl_kernel/type.cuh>           // For packed_t, device::cast, fp32x2_t
#include <sgl_kernel/utils.cuh>          // For SGL_DEVICE, kWarpThreads, kFullMask, LaunchKernel
#include <sgl_kernel/vec.cuh>            // For AlignedVector

#include <dlpack/dlpack.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace device::norm {

/// Bytes of every global access.
inline constexpr std::uint32_t kPackBytes = 16;

/// 16 bytes as four 32-bit words (each a packed pair of fp16/bf16). Raw words rather than
/// AlignedVector<packed_t<T>, 4>: fp16x2_t/bf16x2_t have user-defined copy assignment, which
/// splits every copy of such a vector into four 32-bit loads/stores; words keep one 128-bit
/// access per pack.
using Pack = AlignedVector<std::uint32_t, kPackBytes / sizeof(std::uint32_t)>;

/// Elements per pack (8 for fp16/bf16).
template <typename T>
inline constexpr std::uint32_t kPackElems = kPackBytes / sizeof(T);

/// The pair of T packed in `bits`, converted to fp32.
template <typename T>
SGL_DEVICE fp32x2_t unpack_pair(std::uint32_t bits) {
  packed_t<T> pair;
  static_assert(sizeof(pair) == sizeof(bits), "a packed pair of a 2-byte type");
  __builtin_memcpy(&pair, &bits, sizeof(bits));
  return cast<fp32x2_t>(pair);
}

/// `value` rounded to a pair of T (round to nearest even), as 32 bits.
template <typename T>
SGL_DEVICE std::uint32_t pack_pair(fp32x2_t value) {
  const packed_t<T> pair = cast<packed_t<T>>(value);
  std::uint32_t bits;
  __builtin_memcpy(&bits, &pair, sizeof(bits));
  return bits;
}

/// The kPacks packs a thread owns in a row of `num_packs` packs: packs first, first + step, ...
/// Each as an index clamped into the row (0 past its end, so that a load stays in the row) and
/// whether it lies inside. kAllInside: the caller guarantees every owned pack is inside (then
/// no index is checked or clamped, and no loaded pack zeroed).
template <int kPacks, bool kAllInside = false>
struct OwnedPacks {
  std::uint32_t index[kPacks];
  bool inside[kPacks];

  SGL_DEVICE OwnedPacks(std::uint32_t first, std::uint32_t step, std::uint32_t num_packs) {
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      const std::uint32_t i = first + static_cast<std::uint32_t>(k) * step;
      inside[k] = kAllInside || i < num_packs;
      index[k] = inside[k] ? i : 0u;
    }
  }
};

/// The kPacks packs of one row a thread owns: packs first, first + step, ... Packs at or past
/// `num_packs` are not accessed and read as zeros (they add nothing to the sum of squares).
template <typename T, int kPacks>
struct RowSlice {
  static_assert(sizeof(T) == 2, "RowSlice: fp16/bf16 element types only");
  static constexpr int kWords = static_cast<int>(Pack::kSize);

  Pack pack[kPacks];

  /// Loads the owned packs of the row at `row` (16-byte aligned). num_packs == 0 loads nothing.
  SGL_DEVICE void load(const T* row,
                       std::uint32_t first,
                       std::uint32_t step,
                       std::uint32_t num_packs) {
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      const std::uint32_t index = first + static_cast<std::uint32_t>(k) * step;
      if (index < num_packs) {
        pack[k].load(static_cast<const void*>(row), index);
      } else {
        pack[k].fill(0u);
      }
    }
  }

  /// load() without a branch around the loads: packs at or past `num_packs` (all of them when it
  /// is 0) read the row's pack 0 (so `row` must hold at least one) and are then zeroed. The
  /// compiler then issues the loads of every tensor at once, where guarded blocks one after
  /// another can leave a second memory round trip on the path of a short kernel.
  SGL_DEVICE void load_unguarded(const T* row,
                                 std::uint32_t first,
                                 std::uint32_t step,
                                 std::uint32_t num_packs) {
    load_unguarded(row, OwnedPacks<kPacks>(first, step, num_packs));
  }

  /// load_unguarded() of the packs `owned` names.
  template <bool kAllInside>
  SGL_DEVICE void load_unguarded(const T* row, const OwnedPacks<kPacks, kAllInside>& owned) {
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      pack[k].load(static_cast<const void*>(row), owned.index[k]);
#pragma unroll
      for (int j = 0; j < kWords; ++j) pack[k][j] = owned.inside[k] ? pack[k][j] : 0u;
    }
  }

  /// Starts copying the owned packs of `row` into this thread's shared-memory slots: pack k
  /// goes to slots[k * slot_step] (slots = smem + threadIdx.x, slot_step = blockDim.x keeps the
  /// slots private and bank-conflict free). Packs at or past num_packs are zero-filled. No
  /// registers are held while the copy is in flight; call load_staged() to read the slots.
  SGL_DEVICE static void stage(const T* row,
                               std::uint32_t first,
                               std::uint32_t step,
                               std::uint32_t num_packs,
                               Pack* slots,
                               std::uint32_t slot_step) {
    const Pack* src = static_cast<const Pack*>(static_cast<const void*>(row));
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      const std::uint32_t index = first + static_cast<std::uint32_t>(k) * step;
      const bool inside = index < num_packs;
      cp_async::copy16(
          slots + static_cast<std::uint32_t>(k) * slot_step, inside ? src + index : src, inside);
    }
  }

  /// Reads the slots filled by stage() (waits for this thread's copies first).
  SGL_DEVICE void load_staged(const Pack* slots, std::uint32_t slot_step) {
    cp_async::wait_all();
#pragma unroll
    for (int k = 0; k < kPacks; ++k) pack[k] = slots[static_cast<std::uint32_t>(k) * slot_step];
  }

  /// Stores the owned packs that lie below `num_packs`.
  SGL_DEVICE void store(T* row,
                        std::uint32_t first,
                        std::uint32_t step,
                        std::uint32_t num_packs) const {
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      const std::uint32_t index = first + static_cast<std::uint32_t>(k) * step;
      if (index < num_packs) pack[k].store(static_cast<void*>(row), index);
    }
  }

  /// Stores the packs `owned` names that lie inside the row.
  template <bool kAllInside>
  SGL_DEVICE void store(T* row, const OwnedPacks<kPacks, kAllInside>& owned) const {
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      if (owned.inside[k]) pack[k].store(static_cast<void*>(row), owned.index[k]);
    }
  }

  /// This thread's part of the sum of squares, in fp32: x^2 + y^2 of each pair (independent of
  /// the other pairs), then one running sum. With two running fmaf chains instead, ptxas issued
  /// a weight load of rmsnorm's two-pack decode kernel only after the sum (docs/kernels/norm.md).
  SGL_DEVICE float sum_squares() const {
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
#pragma unroll
      for (int j = 0; j < kWords; ++j) {
        const fp32x2_t v = unpack_pair<T>(pack[k][j]);
        sum += v.x * v.x + v.y * v.y;
      }
    }
    return sum;
  }

  /// this = round(fp32(this) + fp32(other)): the residual add of fused_add_rmsnorm.
  SGL_DEVICE void add(const RowSlice& other) {
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
#pragma unroll
      for (int j = 0; j < kWords; ++j) {
        const fp32x2_t a = unpack_pair<T>(pack[k][j]);
        const fp32x2_t b = unpack_pair<T>(other.pack[k][j]);
        pack[k][j] = pack_pair<T>(fp32x2_t{a.x + b.x, a.y + b.y});
      }
    }
  }

  /// this = round((fp32(this) * scale) * fp32(weight)), one rounding per element.
  SGL_DEVICE void scale(const RowSlice& weight, float scale) {
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
#pragma unroll
      for (int j = 0; j < kWords; ++j) {
        const fp32x2_t x = unpack_pair<T>(pack[k][j]);
        const fp32x2_t w = unpack_pair<T>(weight.pack[k][j]);
        pack[k][j] = pack_pair<T>(fp32x2_t{(x.x * scale) * w.x, (x.y * scale) * w.y});
      }
    }
  }
};

/// A slice times its weight, element by element in fp32, kept until the row's scale is known:
/// out = round((x * w) * scale), fp32 inside, one rounding. The decode kernel forms it before the
/// row's reduction, so the weight is needed as early as the row and ptxas issues both loads
/// together; otherwise it may issue the weight's after the warp's sum (docs/kernels/norm.md).
template <typename T, int kPacks>
struct WeightedSlice {
  static constexpr int kWords = RowSlice<T, kPacks>::kWords;

  fp32x2_t product[kPacks][kWords];

  SGL_DEVICE WeightedSlice(const RowSlice<T, kPacks>& x, const RowSlice<T, kPacks>& weight) {
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
#pragma unroll
      for (int j = 0; j < kWords; ++j) {
        const fp32x2_t a = unpack_pair<T>(x.pack[k][j]);
        const fp32x2_t b = unpack_pair<T>(weight.pack[k][j]);
        product[k][j] = fp32x2_t{a.x * b.x, a.y * b.y};
      }
    }
  }

  /// out = round(this * scale).
  SGL_DEVICE void scale_into(RowSlice<T, kPacks>& out, float scale) const {
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
#pragma unroll
      for (int j = 0; j < kWords; ++j) {
        out.pack[k][j] = pack_pair<T>(fp32x2_t{product[k][j].x * scale, product[k][j].y * scale});
      }
    }
  }
};

/// Whether the plan of kGroup-lane row groups (0: the CTA plan) keeps its weight packs in
/// registers: the warp-group plans do; the CTA plan stages them (its rows are long).
template <std::uint32_t kGroup>
inline constexpr bool kWeightInRegisters = kGroup != 0;

/// The weight packs a thread applies to every row it owns (the same packs for each row):
/// kInRegisters: loaded with every batch of rows, right after the rows' own loads (L1 hits after
/// the first batch). Loaded once before the row loop instead, the compiler schedules their
/// conversion ahead of the first rows' loads, which serialises two memory round trips in a
/// decode CTA. Otherwise staged into this thread's shared-memory slots with cp.async once and
/// read back per batch of rows (no registers held while the rows load).
template <typename T, int kPacks, bool kInRegisters>
struct RowWeight {
  RowSlice<T, kPacks> slice;

  /// Before the row loop: starts staging the packs into `slots` (RowSlice::stage); nothing to
  /// do for packs held in registers.
  SGL_DEVICE void stage(const T* weight,
                        std::uint32_t first,
                        std::uint32_t step,
                        std::uint32_t num_packs,
                        Pack* slots,
                        std::uint32_t slot_step) {
    if constexpr (!kInRegisters) {
      RowSlice<T, kPacks>::stage(weight, first, step, num_packs, slots, slot_step);
    }
  }

  /// Each batch of rows, after issuing the rows' loads: loads the packs held in registers.
  SGL_DEVICE void load(const T* weight,
                       std::uint32_t first,
                       std::uint32_t step,
                       std::uint32_t num_packs) {
    if constexpr (kInRegisters) slice.load_unguarded(weight, first, step, num_packs);
  }

  /// Makes `slice` hold the packs: staged ones are read from `slots` once this thread's copies
  /// have landed (call it once per batch of rows, just before the first scale: the wait then
  /// overlaps the first reduction); nothing to do for packs held in registers.
  SGL_DEVICE void ready(const Pack* slots, std::uint32_t slot_step) {
    if constexpr (!kInRegisters) slice.load_staged(slots, slot_step);
  }
};

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

/// 1 / sqrt(mean of squares + eps) from the row's sum of squares (inv_dim = 1 / D).
SGL_DEVICE float rms_scale(float sum_squares, float inv_dim, float eps) {
  return rsqrtf(sum_squares * inv_dim + eps);
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

}  // namespace device::norm

namespace host::norm {

/// The launch shape of the row kernels (rmsnorm, fused_add_rmsnorm); the defaults ship.
///   kWarpCtaThreads  CTA size of the warp-group plans (several rows per CTA)
///   kRowsPerGroup    rows each lane group takes per iteration, all loaded before the first
///                    reduction (capped by rows_per_group so a thread holds at most 8 packs)
///   kDecodeMaxRows   batches of at most this many rows take the decode plan: one CTA per row
///                    and one or two packs per thread (use_decode_plan)
template <std::uint32_t kWarpCtaThreads_ = 128, int kRowsPerGroup_ = 4, int kDecodeMaxRows_ = 64>
struct RowConfig {
  static constexpr std::uint32_t kWarpCtaThreads = kWarpCtaThreads_;
  static constexpr int kRowsPerGroup = kRowsPerGroup_;
  static constexpr std::int64_t kDecodeMaxRows = kDecodeMaxRows_;
  static_assert(kWarpCtaThreads >= 32 && kWarpCtaThreads <= 1024 && kWarpCtaThreads % 32 == 0,
                "RowConfig: kWarpCtaThreads must be a multiple of 32 in [32, 1024]");
  static_assert(kRowsPerGroup >= 1 && kRowsPerGroup <= 4, "RowConfig: kRowsPerGroup: 1..4");
};

/// Packs per thread of the CTA path, and its largest CTA: rows up to 4 * 512 packs = 16384
/// fp16/bf16 elements stay in registers.
inline constexpr int kCtaPacks = 4;
inline constexpr std::uint32_t kCtaMaxThreads = 512;
/// Packs per thread of the warp-group path below one warp per row.
inline constexpr int kWarpPacks = 2;
/// The most packs of one tensor a thread holds at once when taking several rows.
inline constexpr int kMaxPacksInFlight = 8;

/// Rows each group of `group` lanes (0: the whole CTA) holding `packs` packs per row of each of
/// `tensors` row tensors takes per iteration: `asked`, at most kMaxPacksInFlight / (packs x
/// tensors); 1 for the CTA path.
constexpr int rows_per_group(std::uint32_t group, int packs, int tensors, int asked) {
  if (group == 0) return 1;
  const int held = packs * tensors;
  const int cap = held >= kMaxPacksInFlight ? 1 : kMaxPacksInFlight / held;
  return asked < cap ? asked : cap;
}

/// __launch_bounds__ of a kernel with row groups of `group` lanes (0: the whole CTA) in CTAs of
/// `warp_threads` (warp-group plans) holding `packs` packs per thread of each of `rows` rows of
/// `tensors` row tensors: its largest CTA, and the resident CTAs per SM the register budget must
/// allow (65536 registers per SM). Two of the largest CTA-path CTAs; a warp-group plan gets 32
/// registers plus 4 per pack held (rows x tensors, the weight, one spare), rounded up to 8.
constexpr std::uint32_t max_threads(std::uint32_t group, std::uint32_t warp_threads) {
  return group == 0 ? kCtaMaxThreads : warp_threads;
}
constexpr std::uint32_t min_blocks(
    std::uint32_t group, int packs, int rows, int tensors, std::uint32_t warp_threads) {
  if (group == 0) return 1024u / kCtaMaxThreads;
  const int budget = (32 + 4 * packs * (rows * tensors + 2) + 7) / 8 * 8;
  const std::uint32_t blocks = 65536u / (warp_threads * static_cast<std::uint32_t>(budget));
  const std::uint32_t most = 2048u / warp_threads;  // resident threads per SM
  return blocks == 0 ? 1u : (blocks < most ? blocks : most);
}

/// Dynamic shared memory of a row kernel of the kGroup plan with kPacks weight packs per thread:
/// the staging slots (RowWeight), none when the plan keeps its weight in registers.
template <std::uint32_t kGroup>
constexpr std::size_t staged_smem_bytes(int packs, std::uint32_t threads) {
  if constexpr (device::norm::kWeightInRegisters<kGroup>) return 0;
  return static_cast<std::size_t>(packs) * threads * device::norm::kPackBytes;
}

/// Whether a warp-group plan (kGroup lanes a row) takes the few-rows form for `num_rows` rows:
/// one row per group and one warp per CTA, so a decode batch spreads over up to num_rows x
/// kGroup / 32 SMs instead of sitting in one or two CTAs. Only while that stays one wave.
template <std::uint32_t kGroup>
inline bool use_few_rows_plan(std::int64_t num_rows, int device_id) {
  if constexpr (kGroup == 0) {
    return false;
  } else {
    const std::int64_t sms = runtime::get_sm_count(device_id);
    return num_rows * kGroup <= sms * std::int64_t{device::kWarpThreads};
  }
}

/// Launches the row kernel of the kGroup / kPacks plan over params.num_rows rows:
/// `kernel_for.template operator()<kR>()` is its instantiation taking kR rows per lane group.
/// Few rows (use_few_rows_plan) take one row per group and one warp per CTA; otherwise CTAs of
/// `threads` threads hold `rows_per_cta` groups of kRows rows. A grid-stride loop only beyond
/// 2^31 - 1 CTAs.
template <std::uint32_t kGroup, int kPacks, int kRows, typename KernelFor, typename Params>
void launch_row_plan(KernelFor kernel_for,
                     const Params& params,
                     std::uint32_t threads,
                     std::uint32_t rows_per_cta,
                     DLDevice dev,
                     bool use_pdl) {
  const auto launch = [&]<int kR>(std::uint32_t cta_threads, std::uint32_t cta_rows) {
    const auto kernel = kernel_for.template operator()<kR>();
    const std::size_t smem = staged_smem_bytes<kGroup>(kPacks, cta_threads);
    const std::int64_t grid =
        std::min<std::int64_t>(div_ceil(params.num_rows, std::int64_t{cta_rows} * kR), 0x7fffffff);
    LaunchKernel(static_cast<unsigned>(grid), cta_threads, dev, smem)
        .enable_pdl(use_pdl)(kernel, params);
  };
  if constexpr (kGroup != 0) {
    if (use_few_rows_plan<kGroup>(params.num_rows, dev.device_id)) {
      return launch.template operator()<1>(device::kWarpThreads, device::kWarpThreads / kGroup);
    }
  }
  launch.template operator()<kRows>(threads, rows_per_cta);
}

/// Whether `num_rows` rows take the decode plan (RowConfig::kDecodeMaxRows): one CTA per row,
/// every thread holding one or two packs (decode_packs_per_thread), no row loop.
template <typename Config>
inline bool use_decode_plan(std::int64_t num_rows) {
  return num_rows <= Config::kDecodeMaxRows;
}

/// Packs per thread of the decode plan: one up to kDecodeOnePackMaxPacks packs (2048 elements),
/// two above (rows of up to 2048 packs, 16384 elements, in at most 1024 threads); rows of 4096
/// elements thus run in 256 threads x 2 packs, as fast as 512 x 1 (docs/kernels/norm.md).
inline constexpr std::uint32_t kDecodeOnePackMaxPacks = 256;
inline int decode_packs_per_thread(std::uint32_t num_packs) {
  return num_packs <= kDecodeOnePackMaxPacks ? 1 : 2;
}
/// The decode plan's largest CTA (rows of 2048 packs, two per thread).
inline constexpr std::uint32_t kDecodeMaxThreads = 1024;
/// The decode plan's CTAs of at most kDecodeWarpSumsMaxWarps warps sum their row with
/// device::norm::WarpSums (warps rounded up to a power of two at compile time); larger ones with
/// cta_sum, which measured faster there (docs/kernels/norm.md).
inline constexpr std::uint32_t kDecodeWarpSumsMaxWarps = 8;

/// Calls `launch.template operator()<kWarps>()` for a decode CTA of `warps` warps holding kPacks
/// packs per thread: kWarps is `warps` rounded up to a power of two while that is at most
/// kDecodeWarpSumsMaxWarps, else 0. Only the values a row can reach are instantiated: one pack
/// per thread means at most 256 packs (1..8 warps), two mean more (5..32 warps).
template <int kPacks, typename Launch>
void dispatch_decode_warps(std::uint32_t warps, Launch&& launch) {
  static_assert(kDecodeOnePackMaxPacks == kDecodeWarpSumsMaxWarps * device::kWarpThreads,
                "one pack per thread: at most kDecodeWarpSumsMaxWarps warps");
  if constexpr (kPacks == 1) {
    if (warps == 1) return launch.template operator()<1>();
    if (warps == 2) return launch.template operator()<2>();
    if (warps <= 4) return launch.template operator()<4>();
    return launch.template operator()<8>();
  } else {
    if (warps <= kDecodeWarpSumsMaxWarps) return launch.template operator()<8>();
    return launch.template operator()<0>();
  }
}

/// Largest row (fp16/bf16 elements) the launch plan supports.
inline constexpr std::int64_t kMaxRowElems = 8 * kCtaPacks * kCtaMaxThreads;  // 16384

/// True when rows of `row_elems` 2-byte elements are supported: a multiple of 8 (whole 16-byte
/// packs), 8 <= row_elems <= 16384.
inline bool is_row_supported(std::int64_t row_elems) {
  return row_elems >= 8 && row_elems <= kMaxRowElems && row_elems % 8 == 0;
}

/// The plan for rows of `num_packs` 16-byte packs. Calls
/// `launch.template operator()<kGroup, kPacks>(threads_per_cta, rows_per_cta)` once:
///   packs <=    8: 4 lanes x 2 packs     packs <=  64: 32 lanes x 2 packs
///   packs <=   16: 8 lanes x 2 packs     packs <= 128: 32 lanes x 4 packs
///   packs <=   32: 16 lanes x 2 packs    else: one CTA of 64..512 threads x 4 packs per row
/// (warp groups run kCtaThreads-thread CTAs). num_packs must satisfy is_row_supported(8 *
/// num_packs).
template <std::uint32_t kCtaThreads, typename Launch>
void dispatch_rows(std::uint32_t num_packs, Launch&& launch) {
  if (num_packs <= 8) {
    launch.template operator()<4, kWarpPacks>(kCtaThreads, kCtaThreads / 4);
  } else if (num_packs <= 16) {
    launch.template operator()<8, kWarpPacks>(kCtaThreads, kCtaThreads / 8);
  } else if (num_packs <= 32) {
    launch.template operator()<16, kWarpPacks>(kCtaThreads, kCtaThreads / 16);
  } else if (num_packs <= 64) {
    launch.template operator()<32, kWarpPacks>(kCtaThreads, kCtaThreads / 32);
  } else if (num_packs <= 128) {
    launch.template operator()<32, 4>(kCtaThreads, kCtaThreads / 32);
  } else {
    // Enough warps that kCtaPacks packs per thread cover the row (129..2048 packs: 64..512).
    const std::uint32_t per_thread = (num_packs + kCtaPacks - 1) / kCtaPacks;
    const std::uint32_t threads = (per_thread + 31u) / 32u * 32u;
    launch.template operator()<0, kCtaPacks>(threads, 1u);
  }
}

}  // namespace host::norm
