// apply_rope_inplace: rotary position embedding of q and k in place, NeoX (rotate-half) or GPT-J
// (interleaved pairs) style, partial rotary (rope_dim <= head_dim), from an fp32 cache
// cos_sin_cache[max_pos, rope_dim] whose row p holds cos(p * f_i) for i < rope_dim / 2 followed
// by sin(p * f_i).
#include <sgl_kernel/dtype_dispatch.h>  // For dispatch_dtype
#include <sgl_kernel/tensor.h>     // For TensorMatcher, SymbolicSize, SymbolicDevice, data_address
#include <sgl_kernel/utils.h>      // For panic, DebugInfo, div_ceil
#include <sgl_kernel/vec_width.h>  // For widest_common_alignment, address_bits
#include <sgl_kernel/cache_hint.cuh>  // For cache::load_hinted, cache::Evict
#include <sgl_kernel/runtime.cuh>     // For runtime::get_sm_count, runtime::get_blocks_per_sm
#include <sgl_kernel/type.cuh>        // For device::cast, fp16_t, bf16_t, fp32_t
#include <sgl_kernel/utils.cuh>  // For LaunchKernel, SGL_DEVICE, PDLWaitPrimary, PDLTriggerSecondary
#include <sgl_kernel/vec.cuh>    // For AlignedVector

#include <dlpack/dlpack.h>
#include <tvm/ffi/container/tensor.h>

#include <algorithm>
#include <cstdint>
#include <vector>

// Tuning knobs (compile-time; scripts/tune_kernels.py sweeps them, scripts/tune_kernels.md):
//   SGL_ROPE_BLOCK         threads per block aimed at (a multiple of 32, 64..512)
//   SGL_ROPE_NEOX_UNROLL   NeoX heads a thread loads before it rotates any (2 vectors each)
//   SGL_ROPE_GPTJ_UNROLL   GPT-J heads a thread loads before it rotates any (1 vector each)
//   SGL_ROPE_PERSISTENT    1: at most one wave of resident blocks striding over the tokens;
//                          0: one block per blockDim.y tokens
//   SGL_ROPE_SPREAD        1: fewer heads side by side per token so that every thread has a
//                          full unroll of heads (more tokens per block); 2: the same for GPT-J
//                          only; 0: as many heads side by side as the block holds
//   SGL_ROPE_WHOLE_WARPS   1: as many tokens per block as make it whole warps (e.g. 2 x 144
//                          threads), at most 512 threads; 0: the target block size rounded down
//   SGL_ROPE_MAX_SIDE      N > 0: at most N heads side by side per token (1: every thread walks
//                          all heads of its token, many tokens per block); 0: no cap
//   SGL_ROPE_MAX_REGS      N > 0: __maxnreg__(N) registers per thread (32..128; 128 lets a
//                          512-thread block run); 0: __launch_bounds__(512) and ptxas's choice
//   SGL_ROPE_LEAN          1: the lean plan (one thread per chunk, token and group of
//                          SGL_ROPE_LEAN_HEADS heads; no loop, few registers, many resident
//                          threads) whenever its grid fits; 2: the same for GPT-J, and for
//                          NeoX below SGL_ROPE_LEAN_NEOX_LIMIT (token, head) pairs;
//                          0: the looping plan only
//   SGL_ROPE_LEAN_NEOX_LIMIT  with SGL_ROPE_LEAN=2: NeoX calls of at least this many
//                          (token, head) pairs take the looping plan (0: every NeoX call)
//   SGL_ROPE_LEAN_HEADS    heads a thread of the lean plan rotates (1..8)
//   SGL_ROPE_LEAN_BLOCK    threads per block the lean plan aims at (a multiple of 32, 64..512)
//   SGL_ROPE_LEAN_ORDER    0: the lean grid runs a head group over all tokens before the next
//                          group (consecutive blocks: same heads, next tokens); 1: token-major
//                          (consecutive blocks: the head groups of the same tokens, so the
//                          blocks resident at once cover whole q/k rows of a token range)
//   SGL_ROPE_CACHE_HINT    L2 eviction hints (a sum): 1 q/k loads evict-first (each head is
//                          read once); 2 the lean plan's cos/sin loads evict-last (the table
//                          is read again for every head of a token, and should stay in L2
//                          while q/k stream past); 4 the looping plan's too (its thread reads
//                          a token's values once for all the heads it walks)
//   SGL_ROPE_PDL_EARLY     1: with PDL, let the next kernel launch as soon as a block starts
//                          (after its griddepcontrol.wait) rather than when it ends; the next
//                          kernel still waits for this grid before touching memory
#ifndef SGL_ROPE_BLOCK
#define SGL_ROPE_BLOCK 256
#endif
#ifndef SGL_ROPE_NEOX_UNROLL
#define SGL_ROPE_NEOX_UNROLL 2
#endif
#ifndef SGL_ROPE_GPTJ_UNROLL
#define SGL_ROPE_GPTJ_UNROLL 4
#endif
#ifndef SGL_ROPE_PERSISTENT
#define SGL_ROPE_PERSISTENT 1
#endif
#ifndef SGL_ROPE_SPREAD
#define SGL_ROPE_SPREAD 2
#endif
#ifndef SGL_ROPE_WHOLE_WARPS
#define SGL_ROPE_WHOLE_WARPS 0
#endif
#ifndef SGL_ROPE_MAX_SIDE
#define SGL_ROPE_MAX_SIDE 0
#endif
#ifndef SGL_ROPE_MAX_REGS
#define SGL_ROPE_MAX_REGS 72
#endif
#ifndef SGL_ROPE_LEAN
#define SGL_ROPE_LEAN 2
#endif
#ifndef SGL_ROPE_LEAN_NEOX_LIMIT
#define SGL_ROPE_LEAN_NEOX_LIMIT 2097152
#endif
#ifndef SGL_ROPE_LEAN_HEADS
#define SGL_ROPE_LEAN_HEADS 1
#endif
#ifndef SGL_ROPE_LEAN_BLOCK
#define SGL_ROPE_LEAN_BLOCK 128
#endif
#ifndef SGL_ROPE_LEAN_ORDER
#define SGL_ROPE_LEAN_ORDER 0
#endif
#ifndef SGL_ROPE_CACHE_HINT
#define SGL_ROPE_CACHE_HINT 2
#endif
#ifndef SGL_ROPE_PDL_EARLY
#define SGL_ROPE_PDL_EARLY 0
#endif
#if SGL_ROPE_MAX_REGS > 0
#define SGL_ROPE_KERNEL_BOUNDS __maxnreg__(SGL_ROPE_MAX_REGS)
#else
#define SGL_ROPE_KERNEL_BOUNDS __launch_bounds__(kRopeMaxBlock)
#endif

namespace {

inline constexpr int kRopeTargetBlock = SGL_ROPE_BLOCK;  // threads per block aimed at
inline constexpr int kRopeMaxBlock = 512;  // one head's chunks alone may need up to 512
inline constexpr int kRopeNeoxUnroll = SGL_ROPE_NEOX_UNROLL;
inline constexpr int kRopeGptjUnroll = SGL_ROPE_GPTJ_UNROLL;
inline constexpr bool kRopePersistent = SGL_ROPE_PERSISTENT != 0;
inline constexpr int kRopeSpread = SGL_ROPE_SPREAD;
inline constexpr bool kRopeWholeWarps = SGL_ROPE_WHOLE_WARPS != 0;
inline constexpr int kRopeMaxSide = SGL_ROPE_MAX_SIDE;
inline constexpr int kRopeLean = SGL_ROPE_LEAN;
inline constexpr int kRopeLeanHeads = SGL_ROPE_LEAN_HEADS;
inline constexpr int kRopeLeanBlock = SGL_ROPE_LEAN_BLOCK;
inline constexpr bool kRopeLeanTokenMajor = SGL_ROPE_LEAN_ORDER != 0;
inline constexpr bool kRopePDLEarly = SGL_ROPE_PDL_EARLY != 0;
static_assert(SGL_ROPE_CACHE_HINT >= 0 && SGL_ROPE_CACHE_HINT <= 7, "SGL_ROPE_CACHE_HINT: 0..7");
inline constexpr auto kRopeHeadEvict =
    (SGL_ROPE_CACHE_HINT & 1) != 0 ? device::cache::Evict::kFirst : device::cache::Evict::kNormal;
inline constexpr auto kRopeLeanTableEvict =
    (SGL_ROPE_CACHE_HINT & 2) != 0 ? device::cache::Evict::kLast : device::cache::Evict::kNormal;
inline constexpr auto kRopeLoopTableEvict =
    (SGL_ROPE_CACHE_HINT & 4) != 0 ? device::cache::Evict::kLast : device::cache::Evict::kNormal;
static_assert(SGL_ROPE_LEAN_ORDER == 0 || SGL_ROPE_LEAN_ORDER == 1, "SGL_ROPE_LEAN_ORDER: 0 or 1");
inline constexpr std::int64_t kRopeLeanNeoxLimit = SGL_ROPE_LEAN_NEOX_LIMIT;
static_assert(kRopeLeanNeoxLimit >= 0, "SGL_ROPE_LEAN_NEOX_LIMIT must be >= 0");
inline constexpr std::int64_t kRopeMaxDim = 1024;
static_assert(kRopeTargetBlock >= 64 && kRopeTargetBlock <= kRopeMaxBlock &&
                  kRopeTargetBlock % 32 == 0,
              "SGL_ROPE_BLOCK must be a multiple of 32 in [64, 512]");
static_assert(kRopeSpread >= 0 && kRopeSpread <= 2, "SGL_ROPE_SPREAD must be 0, 1 or 2");
static_assert(kRopeMaxSide >= 0 && kRopeMaxSide <= 64, "SGL_ROPE_MAX_SIDE: 0..64");
static_assert(kRopeLean >= 0 && kRopeLean <= 2, "SGL_ROPE_LEAN must be 0, 1 or 2");
static_assert(kRopeLeanBlock >= 64 && kRopeLeanBlock <= kRopeMaxBlock && kRopeLeanBlock % 32 == 0,
              "SGL_ROPE_LEAN_BLOCK must be a multiple of 32 in [64, 512]");
static_assert(kRopeLeanHeads >= 1 && kRopeLeanHeads <= 8, "SGL_ROPE_LEAN_HEADS: 1..8");
static_assert(SGL_ROPE_MAX_REGS == 0 || (SGL_ROPE_MAX_REGS >= 32 && SGL_ROPE_MAX_REGS <= 128),
              "SGL_ROPE_MAX_REGS: 0 or 32..128");
static_assert(kRopeNeoxUnroll >= 1 && kRopeNeoxUnroll <= 8, "SGL_ROPE_NEOX_UNROLL: 1..8");
static_assert(kRopeGptjUnroll >= 1 && kRopeGptjUnroll <= 8, "SGL_ROPE_GPTJ_UNROLL: 1..8");

/// Heads a thread of the given style loads before it rotates any.
constexpr int rope_unroll(bool neox) {
  return neox ? kRopeNeoxUnroll : kRopeGptjUnroll;
}

template <typename T>
struct RopeParams {
  T* q;
  T* k;
  const fp32_t* cos_sin;  // [max_pos, rope_dim]
  const void* positions;
  std::int64_t q_token_stride;  // elements
  std::int64_t q_head_stride;
  std::int64_t k_token_stride;
  std::int64_t k_head_stride;
  std::int64_t position_stride;
  std::int64_t num_tokens;
  std::int64_t max_pos;
  int num_q_heads;
  int num_heads;       // q heads then k heads
  int rope_dim;        // elements rotated at the start of every head
  int chunks;          // vector chunks per head (threads that share one head)
  int heads_per_pass;  // heads handled side by side for one token (blockDim.x / chunks)
  int cs_vec_bytes;    // widest aligned load of the cos/sin cache: 16, 8 or 4
};

/// dst[0..N) = src[0..N) from the fp32 cache, with the widest loads `vec_bytes` allows and the L2
/// eviction priority kPolicy.
template <int N, device::cache::Evict kPolicy>
SGL_DEVICE void load_cos_sin(const fp32_t* src, fp32_t (&dst)[N], int vec_bytes) {
  if constexpr (N % 4 == 0) {
    if (vec_bytes == 16) {
#pragma unroll
      for (int i = 0; i < N; i += 4) {
        device::AlignedVector<fp32_t, 4> v;
        device::cache::load_hinted<kPolicy>(v, reinterpret_cast<const decltype(v)*>(src + i));
#pragma unroll
        for (int j = 0; j < 4; ++j) dst[i + j] = v[j];
      }
      return;
    }
  }
  if constexpr (N % 2 == 0) {
    if (vec_bytes >= 8) {
#pragma unroll
      for (int i = 0; i < N; i += 2) {
        device::AlignedVector<fp32_t, 2> v;
        device::cache::load_hinted<kPolicy>(v, reinterpret_cast<const decltype(v)*>(src + i));
        dst[i] = v[0];
        dst[i + 1] = v[1];
      }
      return;
    }
  }
#pragma unroll
  for (int i = 0; i < N; ++i) device::cache::load_hinted<kPolicy>(dst[i], src + i);
}

/// (a, b) -> (a cos - b sin, b cos + a sin) in fp32 with every product and sum rounded on its
/// own (no FMA contraction), exactly as float32 torch computes x1 * cos - x2 * sin.
SGL_DEVICE void rotate(float& a, float& b, float c, float s) {
  const float ra = __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s));
  const float rb = __fadd_rn(__fmul_rn(b, c), __fmul_rn(a, s));
  a = ra;
  b = rb;
}

/// The chunk of one head a thread owns: NeoX, elements [first, first + kVec) of the rotary
/// part's first half and the same of its second half; GPT-J, elements [first, first + kVec)
/// (kVec / 2 interleaved pairs).
template <typename T, bool kNeox, int kVec>
struct HeadChunk {
  static constexpr int kParts = kNeox ? 2 : 1;             // vectors per head and chunk
  static constexpr int kCosSin = kNeox ? kVec : kVec / 2;  // cos (and sin) values per chunk
  static_assert(kCosSin >= 1, "a GPT-J chunk needs at least one (even, odd) pair");
  device::AlignedVector<T, kVec> part[kParts];

  SGL_DEVICE void load(const T* head, int first, int half) {
    using Vec = device::AlignedVector<T, kVec>;
    device::cache::load_hinted<kRopeHeadEvict>(part[0], reinterpret_cast<const Vec*>(head + first));
    if constexpr (kNeox) {
      device::cache::load_hinted<kRopeHeadEvict>(part[1],
                                                 reinterpret_cast<const Vec*>(head + half + first));
    }
  }
  /// Rotates the chunk in fp32 and stores it back to `head`.
  SGL_DEVICE void rotate_store(T* head,
                               int first,
                               int half,
                               const fp32_t (&cos_v)[kCosSin],
                               const fp32_t (&sin_v)[kCosSin]) {
    if constexpr (kNeox) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        float a = device::cast<fp32_t>(part[0][j]);
        float b = device::cast<fp32_t>(part[1][j]);
        rotate(a, b, cos_v[j], sin_v[j]);
        part[0][j] = device::cast<T>(a);
        part[1][j] = device::cast<T>(b);
      }
      part[0].store(head + first);
      part[1].store(head + half + first);
    } else {
#pragma unroll
      for (int j = 0; j < kCosSin; ++j) {
        float a = device::cast<fp32_t>(part[0][2 * j]);
        float b = device::cast<fp32_t>(part[0][2 * j + 1]);
        rotate(a, b, cos_v[j], sin_v[j]);
        part[0][2 * j] = device::cast<T>(a);
        part[0][2 * j + 1] = device::cast<T>(b);
      }
      part[0].store(head + first);
    }
  }
};

/// Head `head` (q heads first, then k heads) of the token whose q and k rows start at q_token and
/// k_token.
template <typename T>
SGL_DEVICE T* head_address(const RopeParams<T>& p, T* q_token, T* k_token, int head) {
  return head < p.num_q_heads
             ? q_token + static_cast<std::int64_t>(head) * p.q_head_stride
             : k_token + static_cast<std::int64_t>(head - p.num_q_heads) * p.k_head_stride;
}

/// The cos and sin values of `chunk` at position `pos` (in range) from the fp32 cache (half =
/// rope_dim / 2).
template <int kCosSin, device::cache::Evict kPolicy, typename T>
SGL_DEVICE void load_chunk_cos_sin(const RopeParams<T>& p,
                                   std::int64_t pos,
                                   int chunk,
                                   int half,
                                   fp32_t (&cos_v)[kCosSin],
                                   fp32_t (&sin_v)[kCosSin]) {
  const fp32_t* row = p.cos_sin + pos * p.rope_dim;
  load_cos_sin<kCosSin, kPolicy>(row + chunk * kCosSin, cos_v, p.cs_vec_bytes);
  load_cos_sin<kCosSin, kPolicy>(row + half + chunk * kCosSin, sin_v, p.cs_vec_bytes);
}

/// Threads: blockDim.x = chunks * heads_per_pass for one token, blockDim.y tokens per block; the
/// grid strides over groups of blockDim.y tokens. Thread (c, slot) owns chunk c of every head
/// slot, slot + heads_per_pass, ... of its token: it reads the token's position and its cos/sin
/// values once, then rotates those heads (rope_unroll(kNeox) at a time, loads first; the first
/// heads' loads are issued before the cos/sin values are needed, the next token's position is
/// prefetched). NeoX: chunk c is
/// elements [c*V, c*V+V) of the first half of the rotary part and the same of the second half;
/// GPT-J: elements [c*V, c*V+V) of the rotary part (V/2 interleaved pairs). Tokens whose
/// position is outside [0, max_pos) are left unchanged.
template <typename T, bool kNeox, int kVecBytes, typename Pos, bool kUsePDL>
__global__ void SGL_ROPE_KERNEL_BOUNDS rope_kernel(const RopeParams<T> p) {
  constexpr int kVec = kVecBytes / static_cast<int>(sizeof(T));  // elements per vector
  using Chunk = HeadChunk<T, kNeox, kVec>;
  constexpr int kCosSin = Chunk::kCosSin;
  constexpr int kUnroll = rope_unroll(kNeox);

  const int chunk = static_cast<int>(threadIdx.x) % p.chunks;
  const int slot = static_cast<int>(threadIdx.x) / p.chunks;
  const int half = p.rope_dim / 2;
  const int first = chunk * kVec;  // the chunk's first element (first half for NeoX)
  const int heads_step = p.heads_per_pass;

  device::PDLWaitPrimary<kUsePDL>();  // q, k and positions may come from the previous kernel
  if constexpr (kRopePDLEarly) device::PDLTriggerSecondary<kUsePDL>();

  const auto* positions = static_cast<const Pos*>(p.positions);
  const std::int64_t token_step = static_cast<std::int64_t>(gridDim.x) * blockDim.y;
  std::int64_t token = static_cast<std::int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  // Positions are prefetched one token ahead; q/k loads are issued before the cos/sin values
  // (which depend on the position) arrive, so the three loads never form a serial chain.
  std::int64_t next_pos = token < p.num_tokens ? positions[token * p.position_stride] : 0;
  for (; token < p.num_tokens; token += token_step) {
    const auto pos = static_cast<std::int64_t>(next_pos);
    if (token + token_step < p.num_tokens) {
      next_pos = positions[(token + token_step) * p.position_stride];
    }
    T* const q_token = p.q + token * p.q_token_stride;
    T* const k_token = p.k + token * p.k_token_stride;

    Chunk x[kUnroll];
    int head0 = slot;  // < num_heads: heads_per_pass <= num_heads
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int head = head0 + u * heads_step;
      if (head < p.num_heads) x[u].load(head_address(p, q_token, k_token, head), first, half);
    }
    if (pos < 0 || pos >= p.max_pos) continue;  // left unchanged; the cache is never read
    fp32_t cos_v[kCosSin];
    fp32_t sin_v[kCosSin];
    load_chunk_cos_sin<kCosSin, kRopeLoopTableEvict>(p, pos, chunk, half, cos_v, sin_v);

    while (true) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int head = head0 + u * heads_step;
        if (head < p.num_heads) {
          x[u].rotate_store(head_address(p, q_token, k_token, head), first, half, cos_v, sin_v);
        }
      }
      head0 += heads_step * kUnroll;
      if (head0 >= p.num_heads) break;
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int head = head0 + u * heads_step;
        if (head < p.num_heads) x[u].load(head_address(p, q_token, k_token, head), first, half);
      }
    }
  }

  if constexpr (!kRopePDLEarly) device::PDLTriggerSecondary<kUsePDL>();
}

/// The lean plan: no loop and no prefetch, so few registers and many resident threads. Block
/// (chunks, tokens per block); thread (c, y) of the block for head group g and token block b
/// rotates chunk c (as in rope_kernel) of heads g * kRopeLeanHeads ... + kRopeLeanHeads - 1 of
/// token b * blockDim.y + y; its q/k loads are issued before its position arrives. Grid
/// (token blocks, head groups), or token-major (SGL_ROPE_LEAN_ORDER=1): one dimension of
/// token blocks x head groups, the head group varying fastest.
template <typename T, bool kNeox, int kVecBytes, typename Pos, bool kUsePDL>
__global__ void __launch_bounds__(kRopeMaxBlock) rope_lean_kernel(const RopeParams<T> p) {
  constexpr int kVec = kVecBytes / static_cast<int>(sizeof(T));
  using Chunk = HeadChunk<T, kNeox, kVec>;
  constexpr int kCosSin = Chunk::kCosSin;

  const int chunk = static_cast<int>(threadIdx.x);
  const int half = p.rope_dim / 2;
  const int first = chunk * kVec;
  std::uint32_t head_group = blockIdx.y;
  std::uint32_t token_block = blockIdx.x;
  if constexpr (kRopeLeanTokenMajor) {
    const auto head_groups =
        static_cast<std::uint32_t>((p.num_heads + kRopeLeanHeads - 1) / kRopeLeanHeads);
    head_group = blockIdx.x % head_groups;
    token_block = blockIdx.x / head_groups;
  }
  const int head0 = static_cast<int>(head_group) * kRopeLeanHeads;
  const std::int64_t token = static_cast<std::int64_t>(token_block) * blockDim.y + threadIdx.y;

  device::PDLWaitPrimary<kUsePDL>();
  if constexpr (kRopePDLEarly) device::PDLTriggerSecondary<kUsePDL>();
  if (token < p.num_tokens) {
    const auto* positions = static_cast<const Pos*>(p.positions);
    const auto pos = static_cast<std::int64_t>(positions[token * p.position_stride]);
    T* const q_token = p.q + token * p.q_token_stride;
    T* const k_token = p.k + token * p.k_token_stride;
    Chunk x[kRopeLeanHeads];
#pragma unroll
    for (int u = 0; u < kRopeLeanHeads; ++u) {
      if (head0 + u < p.num_heads) {
        x[u].load(head_address(p, q_token, k_token, head0 + u), first, half);
      }
    }
    if (pos >= 0 && pos < p.max_pos) {  // else left unchanged; the cache is never read
      fp32_t cos_v[kCosSin];
      fp32_t sin_v[kCosSin];
      load_chunk_cos_sin<kCosSin, kRopeLeanTableEvict>(p, pos, chunk, half, cos_v, sin_v);
#pragma unroll
      for (int u = 0; u < kRopeLeanHeads; ++u) {
        if (head0 + u >= p.num_heads) break;
        x[u].rotate_store(head_address(p, q_token, k_token, head0 + u), first, half, cos_v, sin_v);
      }
    }
  }
  if constexpr (!kRopePDLEarly) device::PDLTriggerSecondary<kUsePDL>();
}

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

/// Launches the lean plan and returns true, or returns false where its grid does not fit (more
/// than 65535 head groups, or token-major: more than 2^31 - 1 blocks).
template <typename T, bool kNeox, int kVecBytes, typename Pos, bool kUsePDL>
bool launch_rope_lean(const RopeParams<T>& params, DLDevice device) {
  using namespace host;
  const std::int64_t head_groups =
      div_ceil(std::int64_t{params.num_heads}, std::int64_t{kRopeLeanHeads});
  if (head_groups > 65535) return false;
  const int block_y = static_cast<int>(std::min<std::int64_t>(
      std::max(1, kRopeLeanBlock / params.chunks), std::max<std::int64_t>(params.num_tokens, 1)));
  const std::int64_t token_blocks = div_ceil(params.num_tokens, std::int64_t{block_y});
  if (token_blocks > 0x7fffffff) return false;
  dim3 grid(static_cast<unsigned>(token_blocks), static_cast<unsigned>(head_groups));
  if constexpr (kRopeLeanTokenMajor) {
    if (token_blocks * head_groups > 0x7fffffff) return false;
    grid = dim3(static_cast<unsigned>(token_blocks * head_groups));
  }
  LaunchKernel(
      grid, dim3(static_cast<unsigned>(params.chunks), static_cast<unsigned>(block_y)), device)
      .enable_pdl(kUsePDL)(rope_lean_kernel<T, kNeox, kVecBytes, Pos, kUsePDL>, params);
  return true;
}

/// Whether a call of the style asks for the lean plan (SGL_ROPE_LEAN).
template <bool kNeox, typename T>
bool wants_lean_plan(const RopeParams<T>& params) {
  if constexpr (kRopeLean == 0) {
    return false;
  } else if constexpr (kRopeLean == 1 || !kNeox) {
    return true;
  } else {
    return params.num_tokens * params.num_heads < kRopeLeanNeoxLimit;
  }
}

template <typename T, bool kNeox, int kVecBytes, typename Pos, bool kUsePDL>
void launch_rope(const RopeParams<T>& params, DLDevice device) {
  using namespace host;
  if (wants_lean_plan<kNeox>(params) &&
      launch_rope_lean<T, kNeox, kVecBytes, Pos, kUsePDL>(params, device)) {
    return;
  }
  constexpr auto kernel = rope_kernel<T, kNeox, kVecBytes, Pos, kUsePDL>;
  const int block_x = params.chunks * params.heads_per_pass;
  int tokens_per_block = std::max(1, kRopeTargetBlock / block_x);
  if constexpr (kRopeWholeWarps) {
    for (int y = tokens_per_block; y * block_x <= kRopeMaxBlock; ++y) {
      if (y * block_x % 32 == 0) {
        tokens_per_block = y;
        break;
      }
    }
  }
  const int block_y = static_cast<int>(
      std::min<std::int64_t>(tokens_per_block, std::max<std::int64_t>(params.num_tokens, 1)));
  const std::int64_t wanted = div_ceil(params.num_tokens, std::int64_t{block_y});
  if (wanted == 0) return;
  std::int64_t grid = std::min<std::int64_t>(wanted, 0x7fffffff);  // the loop strides beyond
  if constexpr (kRopePersistent) {
    const std::int64_t resident =
        static_cast<std::int64_t>(runtime::get_sm_count(device.device_id)) *
        runtime::get_blocks_per_sm(kernel, block_x * block_y, 0, device.device_id);
    grid = std::max<std::int64_t>(1, std::min(wanted, resident));
  }
  LaunchKernel(static_cast<unsigned>(grid),
               dim3(static_cast<unsigned>(block_x), static_cast<unsigned>(block_y)),
               device)
      .enable_pdl(kUsePDL)(kernel, params);
}

template <typename T, bool kNeox, typename Pos, bool kUsePDL>
void dispatch_rope_width(const RopeParams<T>& params, int vec_bytes, DLDevice device) {
  // Widths below one element (NeoX) or one (even, odd) pair (GPT-J) are never chosen.
  constexpr int kMin = static_cast<int>(sizeof(T)) * (kNeox ? 1 : 2);
  switch (vec_bytes) {
    case 16:
      return launch_rope<T, kNeox, 16, Pos, kUsePDL>(params, device);
    case 8:
      if constexpr (8 >= kMin) return launch_rope<T, kNeox, 8, Pos, kUsePDL>(params, device);
      break;
    case 4:
      if constexpr (4 >= kMin) return launch_rope<T, kNeox, 4, Pos, kUsePDL>(params, device);
      break;
    case 2:
      if constexpr (2 >= kMin) return launch_rope<T, kNeox, 2, Pos, kUsePDL>(params, device);
      break;
    default:
      break;
  }
  host::panic(host::DebugInfo{}, "apply_rope_inplace: internal error: vector width ", vec_bytes);
}

/// Rotates q [T, Hq, D] and k [T, Hk, D] in place (dtype T; any token and head strides, last
/// stride 1, no self-overlap) at positions[T] (int32/int64, any stride) from cos_sin_cache
/// [max_pos, rope_dim] (fp32, contiguous). rope_dim: 0, or the cache's size(1) (a check).
template <typename T, bool kUsePDL>
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
  const std::int64_t vec_bytes =
      widest_common_alignment(16,
                              {bytes_if(hq > 0, address_bits(data_address(q))),
                               bytes_if(hk > 0, address_bits(data_address(k))),
                               bytes_if(hq > 0 && tokens > 1, q.stride(0) * kElem),
                               bytes_if(hq > 1, q.stride(1) * kElem),
                               bytes_if(hk > 0 && tokens > 1, k.stride(0) * kElem),
                               bytes_if(hk > 1, k.stride(1) * kElem),
                               (is_neox ? rd / 2 : rd) * kElem});
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
  const int chunks = static_cast<int>((is_neox ? rd / 2 : rd) * kElem / vec_bytes);
  const auto heads = static_cast<int>(hq + hk);
  int per_pass = chunks >= kRopeTargetBlock ? 1 : std::min(heads, kRopeTargetBlock / chunks);
  if (kRopeSpread == 1 || (kRopeSpread == 2 && !is_neox)) {
    per_pass = std::min(per_pass, div_ceil(heads, rope_unroll(is_neox)));
  }
  if (kRopeMaxSide > 0) per_pass = std::min(per_pass, kRopeMaxSide);
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
      dispatch_rope_width<T, true, std::int64_t, kUsePDL>(params, width, dev);
    } else {
      dispatch_rope_width<T, true, std::int32_t, kUsePDL>(params, width, dev);
    }
  } else {
    if (pos64) {
      dispatch_rope_width<T, false, std::int64_t, kUsePDL>(params, width, dev);
    } else {
      dispatch_rope_width<T, false, std::int32_t, kUsePDL>(params, width, dev);
    }
  }
}

/// The module's export: apply_rope_inplace for q's dtype (fp16, bf16, fp32).
template <bool kUsePDL>
void apply_rope_inplace_by_dtype(tvm::ffi::TensorView q,
                                 tvm::ffi::TensorView k,
                                 tvm::ffi::TensorView cos_sin_cache,
                                 tvm::ffi::TensorView positions,
                                 bool is_neox,
                                 std::int64_t rope_dim) {
  host::dispatch_dtype<fp16_t, bf16_t, fp32_t>(
      q.dtype(), "apply_rope_inplace", "q", [&]<typename T>() {
        apply_rope_inplace<T, kUsePDL>(q, k, cos_sin_cache, positions, is_neox, rope_dim);
      });
}

}  // namespace
