// apply_rope_inplace: rotary position embedding of q and k in place, NeoX (rotate-half) or GPT-J
// (interleaved pairs) style, partial rotary (rope_dim <= head_dim), from an fp32 cache
// cos_sin_cache[max_pos, rope_dim] whose row p holds cos(p * f_i) for i < rope_dim / 2 followed
// by sin(p * f_i).
#include <sgl_kernel/dtype_dispatch.h>  // For dispatch_dtype
#include <sgl_kernel/tensor.h>     // For TensorMatcher, SymbolicSize, SymbolicDevice, data_address
#include <sgl_kernel/utils.h>      // For panic, DebugInfo, div_ceil
#include <sgl_kernel/vec_width.h>  // For widest_common_alignment, address_bits
#include <sgl_kernel/cache_hint.cuh>  // For cache::Evict
#include <sgl_kernel/runtime.cuh>     // For runtime::get_sm_count, runtime::get_blocks_per_sm
#include <sgl_kernel/type.cuh>        // For device::cast, fp16_t, bf16_t, fp32_t
#include <sgl_kernel/utils.cuh>  // For LaunchKernel, SGL_DEVICE, PDLWaitPrimary, PDLTriggerSecondary

#include <dlpack/dlpack.h>
#include <tvm/ffi/container/tensor.h>

#include "rope_kernels.cuh"  // rope_kernel, rope_lean_kernel, rope_decode_kernel, RopeParams, ...

#include <algorithm>
#include <cstdint>
#include <vector>

namespace {

/// The launch shape of rope; the defaults ship.
///   kBlock          threads per block the looping plan aims at (a multiple of 32, 64..512)
///   kNeoxUnroll     NeoX heads a thread of the looping plan loads before it rotates any
///   kGptjUnroll     GPT-J heads, likewise (GPT-J spreads the heads so each thread has them all)
///   kMaxRegs        registers per thread of the looping plan (__maxnreg__, 32..128)
///   kLeanBlock      threads per block the lean plan aims at (a multiple of 32, 64..512)
///   kLeanHeads      heads a thread of the lean plan rotates (1..8)
///   kLeanNeoxLimit  NeoX calls of fewer (token, head) pairs take the lean plan (GPT-J always)
template <int kBlock_ = 256,
          int kNeoxUnroll_ = 2,
          int kGptjUnroll_ = 4,
          int kMaxRegs_ = 72,
          int kLeanBlock_ = 128,
          int kLeanHeads_ = 1,
          std::int64_t kLeanNeoxLimit_ = 2097152>
struct RopeConfig {
  static constexpr int kBlock = kBlock_;
  static constexpr int kNeoxUnroll = kNeoxUnroll_;
  static constexpr int kGptjUnroll = kGptjUnroll_;
  static constexpr int kMaxRegs = kMaxRegs_;
  static constexpr int kLeanBlock = kLeanBlock_;
  static constexpr int kLeanHeads = kLeanHeads_;
  static constexpr std::int64_t kLeanNeoxLimit = kLeanNeoxLimit_;
  static_assert(kBlock >= 64 && kBlock <= kRopeMaxBlock && kBlock % 32 == 0,
                "RopeConfig: kBlock must be a multiple of 32 in [64, 512]");
  static_assert(kNeoxUnroll >= 1 && kNeoxUnroll <= 8, "RopeConfig: kNeoxUnroll: 1..8");
  static_assert(kGptjUnroll >= 1 && kGptjUnroll <= 8, "RopeConfig: kGptjUnroll: 1..8");
  static_assert(kMaxRegs >= 32 && kMaxRegs <= 128, "RopeConfig: kMaxRegs: 32..128");
  static_assert(kLeanBlock >= 64 && kLeanBlock <= kRopeMaxBlock && kLeanBlock % 32 == 0,
                "RopeConfig: kLeanBlock must be a multiple of 32 in [64, 512]");
  static_assert(kLeanHeads >= 1 && kLeanHeads <= 8, "RopeConfig: kLeanHeads: 1..8");
  static_assert(kLeanNeoxLimit >= 0, "RopeConfig: kLeanNeoxLimit must be >= 0");

  /// Heads a thread of the looping plan loads before it rotates any.
  static constexpr int unroll(bool neox) { return neox ? kNeoxUnroll : kGptjUnroll; }
};

// ---------------------------------------------------------------- host side

/// Raises "apply_rope_inplace: tensor '<name>' <what...>; tensor: shape=..., ...".
template <typename... Args>
[[noreturn]] void rope_fail_tensor(const tvm::ffi::TensorView& view,
                                   const char* name,
                                   const Args&... what) {
  host::panic(host::DebugInfo{},
              "apply_rope_inplace: tensor '",
              name,
              "' ",
              what...,
              "; tensor: ",
              host::details::describe(view));
}

/// The lean plan's block (chunks, block_y) and grid (tokens, head_blocks): at most
/// Config::kLeanBlock threads (one head's chunks at least), each rotating heads_per_thread heads
/// of one token, the heads spread evenly over the head blocks (no block mostly idle).
struct LeanGrid {
  int block_y;
  std::int64_t head_blocks;
};

template <typename Config>
LeanGrid lean_grid(int heads, int chunks, int heads_per_thread = Config::kLeanHeads) {
  using host::div_ceil;
  const std::int64_t per_block = std::int64_t{std::max(1, Config::kLeanBlock / chunks)};
  const std::int64_t slots = div_ceil(std::int64_t{heads}, std::int64_t{heads_per_thread});
  const std::int64_t head_blocks = div_ceil(slots, per_block);
  return {static_cast<int>(div_ceil(slots, head_blocks)), head_blocks};
}

/// Whether the lean grid fits: at most 65535 head blocks (grid.y) and 2^31 - 1 tokens (grid.x).
template <typename Config>
bool lean_grid_fits(std::int64_t tokens, int heads, int chunks) {
  return lean_grid<Config>(heads, chunks).head_blocks <= 65535 && tokens <= 0x7fffffff;
}

/// Launches `kernel` (the lean or decode kernel) on the lean grid `g`: block (chunks, block_y),
/// grid (tokens, head_blocks).
template <bool kUsePDL, typename T, typename Kernel>
void launch_on_lean_grid(Kernel kernel,
                         const RopeParams<T>& params,
                         const LeanGrid& g,
                         DLDevice device) {
  host::LaunchKernel(
      dim3(static_cast<unsigned>(params.num_tokens), static_cast<unsigned>(g.head_blocks)),
      dim3(static_cast<unsigned>(params.chunks), static_cast<unsigned>(g.block_y)),
      device)
      .enable_pdl(kUsePDL)(kernel, params);
}

/// Launches rope_decode_kernel for a decode call whose rotary size it is built for (64 or 128)
/// and whose cos/sin rows allow its loads; returns false (nothing launched) otherwise.
template <typename Config, typename T, bool kNeox, int kVecBytes, typename Pos, bool kUsePDL>
bool launch_rope_decode(const RopeParams<T>& params, DLDevice device) {
  constexpr int kCosSin = HeadChunk<T, kNeox, kVecBytes / static_cast<int>(sizeof(T))>::kCosSin;
  if (params.cs_vec_bytes < kCosSinWidth<kCosSin> * 4) return false;
  const auto launch = [&](auto kernel) {
    launch_on_lean_grid<kUsePDL>(
        kernel, params, lean_grid<Config>(params.num_heads, params.chunks, 1), device);
    return true;
  };
  switch (params.rope_dim) {
    case 64:
      return launch(rope_decode_kernel<T, kNeox, kVecBytes, 64, Pos, kUsePDL>);
    case 128:
      return launch(rope_decode_kernel<T, kNeox, kVecBytes, 128, Pos, kUsePDL>);
    default:
      return false;
  }
}

/// Launches the lean plan (`lean`, its grid fits; decode calls in its decode form where it
/// applies) or the looping plan, a persistent grid (at most one wave of resident blocks striding
/// over groups of tokens).
template <typename Config, typename T, bool kNeox, int kVecBytes, typename Pos, bool kUsePDL>
void launch_rope(const RopeParams<T>& params, bool lean, DLDevice device) {
  using namespace host;
  if (lean) {
    using device::cache::Evict;
    const bool decode = params.num_tokens * params.num_heads <= kDecodePairs;
    // Decode calls at the vector width they take when q/k are aligned (NeoX 8 bytes, GPT-J 16).
    if constexpr (kVecBytes == (kNeox ? 8 : 16)) {
      if (decode && launch_rope_decode<Config, T, kNeox, kVecBytes, Pos, kUsePDL>(params, device)) {
        return;
      }
    }
    // Larger calls stream q/k through L2: evict-last keeps the cos/sin rows that every head block
    // of a token reads again. Decode calls stay in L2, and there the hint only cost time.
    const auto kernel =
        decode ? rope_lean_kernel<Config, T, kNeox, kVecBytes, Pos, kUsePDL, Evict::kNormal>
               : rope_lean_kernel<Config, T, kNeox, kVecBytes, Pos, kUsePDL, Evict::kLast>;
    launch_on_lean_grid<kUsePDL>(
        kernel, params, lean_grid<Config>(params.num_heads, params.chunks), device);
    return;
  }
  constexpr auto kernel = rope_kernel<Config, T, kNeox, kVecBytes, Pos, kUsePDL>;
  const int block_x = params.chunks * params.heads_per_pass;
  const int tokens_per_block = std::max(1, Config::kBlock / block_x);
  const int block_y = static_cast<int>(
      std::min<std::int64_t>(tokens_per_block, std::max<std::int64_t>(params.num_tokens, 1)));
  const std::int64_t wanted = div_ceil(params.num_tokens, std::int64_t{block_y});
  if (wanted == 0) return;
  const std::int64_t resident =
      static_cast<std::int64_t>(runtime::get_sm_count(device.device_id)) *
      runtime::get_blocks_per_sm(kernel, block_x * block_y, 0, device.device_id);
  const std::int64_t grid = std::max<std::int64_t>(1, std::min(wanted, resident));
  LaunchKernel(static_cast<unsigned>(grid),
               dim3(static_cast<unsigned>(block_x), static_cast<unsigned>(block_y)),
               device)
      .enable_pdl(kUsePDL)(kernel, params);
}

template <typename Config, typename T, bool kNeox, typename Pos, bool kUsePDL>
void dispatch_rope_width(const RopeParams<T>& params, int vec_bytes, bool lean, DLDevice device) {
  // Widths below one element (NeoX) or one (even, odd) pair (GPT-J) are never chosen.
  constexpr int kMin = static_cast<int>(sizeof(T)) * (kNeox ? 1 : 2);
  switch (vec_bytes) {
    case 16:
      return launch_rope<Config, T, kNeox, 16, Pos, kUsePDL>(params, lean, device);
    case 8:
      if constexpr (8 >= kMin)
        return launch_rope<Config, T, kNeox, 8, Pos, kUsePDL>(params, lean, device);
      break;
    case 4:
      if constexpr (4 >= kMin)
        return launch_rope<Config, T, kNeox, 4, Pos, kUsePDL>(params, lean, device);
      break;
    case 2:
      if constexpr (2 >= kMin)
        return launch_rope<Config, T, kNeox, 2, Pos, kUsePDL>(params, lean, device);
      break;
    default:
      break;
  }
  host::panic(host::DebugInfo{}, "apply_rope_inplace: internal error: vector width ", vec_bytes);
}

/// Rotates q [T, Hq, D] and k [T, Hk, D] in place (dtype T; any token and head strides, last
/// stride 1, no self-overlap) at positions[T] (int32/int64, any stride) from cos_sin_cache
/// [max_pos, rope_dim] (fp32, contiguous). rope_dim: 0, or the cache's size(1) (a check).
template <typename T, bool kUsePDL, typename Config = RopeConfig<>>
void apply_rope_inplace(tvm::ffi::TensorView q,
                        tvm::ffi::TensorView k,
                        tvm::ffi::TensorView cos_sin_cache,
                        tvm::ffi::TensorView positions,
                        bool is_neox,
                        std::int64_t rope_dim) {
  using namespace host;
  auto num_tokens = SymbolicSize{"num_tokens"};
  auto num_q_heads = SymbolicSize{"num_q_heads"};
  auto num_k_heads = SymbolicSize{"num_k_heads"};
  auto head_dim = SymbolicSize{"head_dim"};
  auto max_pos = SymbolicSize{"max_position"};
  auto cache_dim = SymbolicSize{"rope_dim"};
  auto device = SymbolicDevice{};
  TensorMatcher({num_tokens, num_q_heads, head_dim})  //
      .with_strides({-1, -1, 1})
      .with_device<kDLCUDA>(device)
      .without_internal_overlap()
      .with_dtype<T>()
      .verify(q, "q");
  TensorMatcher({num_tokens, num_k_heads, head_dim})  //
      .with_strides({-1, -1, 1})
      .with_device<kDLCUDA>(device)
      .without_internal_overlap()
      .with_dtype<T>()
      .verify(k, "k");
  TensorMatcher({max_pos, cache_dim})  //
      .with_device<kDLCUDA>(device)
      .with_dtype<fp32_t>()
      .verify(cos_sin_cache, "cos_sin_cache");
  TensorMatcher({num_tokens})  //
      .with_strides({-1})
      .with_device<kDLCUDA>(device)
      .with_dtype<std::int32_t, std::int64_t>()
      .verify(positions, "positions");

  const std::int64_t rd = cache_dim.unwrap();
  const std::int64_t dim = head_dim.unwrap();
  if (rope_dim != 0 && rope_dim != rd) {
    panic(DebugInfo{},
          "apply_rope_inplace: rope_dim=",
          rope_dim,
          " does not match cos_sin_cache.size(1) = ",
          rd,
          " (a row holds rope_dim / 2 cos values, then rope_dim / 2 sin values)");
  }
  if (rd <= 0 || rd % 2 != 0 || rd > kRopeMaxDim) {
    rope_fail_tensor(cos_sin_cache,
                     "cos_sin_cache",
                     "has rope_dim = size(1) = ",
                     rd,
                     "; it must be even and in [2, ",
                     kRopeMaxDim,
                     "]");
  }
  if (rd > dim) {
    panic(DebugInfo{},
          "apply_rope_inplace: rope_dim ",
          rd,
          " (cos_sin_cache.size(1)) exceeds head_dim ",
          dim);
  }
  const std::int64_t hq = num_q_heads.unwrap();
  const std::int64_t hk = num_k_heads.unwrap();
  const std::int64_t tokens = num_tokens.unwrap();
  if (hq + hk > (std::int64_t{1} << 30)) {
    panic(DebugInfo{}, "apply_rope_inplace: too many heads (", hq, " + ", hk, ")");
  }
  if (tokens == 0 || hq + hk == 0) return;

  // The widest vector aligned for every head start and for the chunk layout of the style.
  constexpr std::int64_t kElem = sizeof(T);
  const auto bytes_if = [](bool used, std::int64_t value) { return used ? value : 0; };
  const auto widest_vector = [&](std::int64_t max_bytes) {
    return widest_common_alignment(max_bytes,
                                   {bytes_if(hq > 0, address_bits(data_address(q))),
                                    bytes_if(hk > 0, address_bits(data_address(k))),
                                    bytes_if(hq > 0 && tokens > 1, q.stride(0) * kElem),
                                    bytes_if(hq > 1, q.stride(1) * kElem),
                                    bytes_if(hk > 0 && tokens > 1, k.stride(0) * kElem),
                                    bytes_if(hk > 1, k.stride(1) * kElem),
                                    (is_neox ? rd / 2 : rd) * kElem});
  };
  const auto chunks_of = [&](std::int64_t vec_bytes) {
    return static_cast<int>((is_neox ? rd / 2 : rd) * kElem / vec_bytes);
  };
  const auto heads = static_cast<int>(hq + hk);
  // The plan: GPT-J, and NeoX below kLeanNeoxLimit (token, head) pairs, take the lean plan where
  // its grid fits, the rest the looping plan. NeoX calls of at most kDecodePairs pairs
  // (decode batches) take at most 8-byte vectors: twice the threads per head and half the
  // cos/sin loads per thread shorten each thread's chain; larger calls stream faster with 16.
  const bool lean_size = !is_neox || tokens * heads < Config::kLeanNeoxLimit;
  std::int64_t vec_bytes = widest_vector(is_neox && tokens * heads <= kDecodePairs ? 8 : 16);
  const bool lean = lean_size && lean_grid_fits<Config>(tokens, heads, chunks_of(vec_bytes));
  if (!lean) vec_bytes = widest_vector(16);
  if (!is_neox && vec_bytes < 2 * kElem) {
    panic(DebugInfo{},
          "apply_rope_inplace: GPT-J style (is_neox=False) rotates (even, odd) element pairs and "
          "needs the data addresses and strides of q and k in multiples of ",
          2 * kElem,
          " bytes; got alignment ",
          vec_bytes,
          " (a view at an odd element offset?)");
  }
  const auto rd32 = static_cast<int>(rd);
  const int chunks = chunks_of(vec_bytes);
  int per_pass = chunks >= Config::kBlock ? 1 : std::min(heads, Config::kBlock / chunks);
  if (!is_neox) {  // GPT-J: fewer heads side by side, so that every thread has a full unroll
    per_pass = std::min(per_pass, div_ceil(heads, Config::kGptjUnroll));
  }
  per_pass = div_ceil(heads, div_ceil(heads, per_pass));  // balance the passes over the heads

  RopeParams<T> params{};
  params.q = static_cast<T*>(data_address(q));
  params.k = static_cast<T*>(data_address(k));
  params.cos_sin = static_cast<const fp32_t*>(data_address(cos_sin_cache));
  params.positions = data_address(positions);
  params.q_token_stride = q.stride(0);
  params.q_head_stride = q.stride(1);
  params.k_token_stride = k.stride(0);
  params.k_head_stride = k.stride(1);
  params.position_stride = positions.stride(0);
  params.num_tokens = tokens;
  params.max_pos = max_pos.unwrap();
  params.num_q_heads = static_cast<int>(hq);
  params.num_heads = heads;
  params.rope_dim = rd32;
  params.chunks = chunks;
  params.heads_per_pass = per_pass;
  params.cs_vec_bytes = static_cast<int>(
      widest_common_alignment(16, {address_bits(params.cos_sin), rd * 4, (rd / 2) * 4}));

  const DLDevice dev = device.unwrap();
  const int width = static_cast<int>(vec_bytes);
  const bool pos64 = is_type<std::int64_t>(positions.dtype());
  if (is_neox) {
    if (pos64) {
      dispatch_rope_width<Config, T, true, std::int64_t, kUsePDL>(params, width, lean, dev);
    } else {
      dispatch_rope_width<Config, T, true, std::int32_t, kUsePDL>(params, width, lean, dev);
    }
  } else {
    if (pos64) {
      dispatch_rope_width<Config, T, false, std::int64_t, kUsePDL>(params, width, lean, dev);
    } else {
      dispatch_rope_width<Config, T, false, std::int32_t, kUsePDL>(params, width, lean, dev);
    }
  }
}

/// The module's export: apply_rope_inplace for q's dtype (fp16, bf16, fp32).
template <bool kUsePDL, typename Config = RopeConfig<>>
void apply_rope_inplace_by_dtype(tvm::ffi::TensorView q,
                                 tvm::ffi::TensorView k,
                                 tvm::ffi::TensorView cos_sin_cache,
                                 tvm::ffi::TensorView positions,
                                 bool is_neox,
                                 std::int64_t rope_dim) {
  host::dispatch_dtype<fp16_t, bf16_t, fp32_t>(
      q.dtype(), "apply_rope_inplace", "q", [&]<typename T>() {
        apply_rope_inplace<T, kUsePDL, Config>(q, k, cos_sin_cache, positions, is_neox, rope_dim);
      });
}

}  // namespace
