// The launch plans of the row kernels (sgl_kernel/impl/row/map.cuh), host side: which lane group
// owns a row (4..32 lanes of a warp, or a whole CTA) and how many 16-byte packs each thread holds,
// picked from the runtime row length (dispatch_rows); the decode plan for few rows (one CTA per
// row, dispatch_decode_warps); the few-rows form of the warp-group plans; the launch bounds and
// shared memory those kernels need. RowConfig holds the tunable launch shape.
#pragma once

#include <sgl_kernel/utils.h>            // For div_ceil
#include <sgl_kernel/impl/row/pack.cuh>  // For row::kPackBytes, row::kWeightInRegisters
#include <sgl_kernel/runtime.cuh>        // For runtime::get_sm_count
#include <sgl_kernel/utils.cuh>          // For LaunchKernel, kWarpThreads

#include <dlpack/dlpack.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace host::row {

/// The launch shape of the row kernels (host::row::map: rmsnorm, fused_add_rmsnorm, ...); the
/// defaults ship.
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
  if constexpr (device::row::kWeightInRegisters<kGroup>) return 0;
  return static_cast<std::size_t>(packs) * threads * device::row::kPackBytes;
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
/// `threads` threads hold `rows_per_cta` groups of kRows rows. `weighted`: the kernel stages a
/// weight (staged_smem_bytes). A grid-stride loop only beyond 2^31 - 1 CTAs.
template <std::uint32_t kGroup, int kPacks, int kRows, typename KernelFor, typename Params>
void launch_row_plan(KernelFor kernel_for,
                     const Params& params,
                     std::uint32_t threads,
                     std::uint32_t rows_per_cta,
                     DLDevice dev,
                     bool use_pdl,
                     bool weighted) {
  const auto launch = [&]<int kR>(std::uint32_t cta_threads, std::uint32_t cta_rows) {
    const auto kernel = kernel_for.template operator()<kR>();
    const std::size_t smem = weighted ? staged_smem_bytes<kGroup>(kPacks, cta_threads) : 0;
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
/// device::row::WarpSums (warps rounded up to a power of two at compile time); larger ones with
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

}  // namespace host::row
