// The rope kernels: the looping plan (rope_kernel), the lean plan (rope_lean_kernel) and its
// decode form (rope_decode_kernel), their parameters and per-chunk helpers. The launch plans and
// checks are in rope.cuh.
#pragma once

#include <sgl_kernel/cache_hint.cuh>  // For cache::load_hinted, cache::Evict
#include <sgl_kernel/type.cuh>        // For device::cast, fp32_t
#include <sgl_kernel/utils.cuh>       // For SGL_DEVICE, PDLWaitPrimary, PDLTriggerSecondary
#include <sgl_kernel/vec.cuh>         // For AlignedVector

#include <cstdint>

namespace {

inline constexpr int kRopeMaxBlock = 512;  // one head's chunks alone may need up to 512 threads
inline constexpr std::int64_t kRopeMaxDim = 1024;
/// Decode calls: at most this many (token, head) pairs (64 tokens of 128 heads; their q/k stay in
/// L2). NeoX ones take at most 8-byte vectors (apply_rope_inplace); all load cos/sin without an
/// L2 hint, and those with rope_dim 64 or 128 take rope_decode_kernel (launch_rope).
inline constexpr std::int64_t kDecodePairs = 8192;

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

/// dst[0..N) = src[0..N) in loads of kWidth floats (src aligned to kWidth * 4 bytes) with the L2
/// eviction priority kPolicy.
template <int kWidth, device::cache::Evict kPolicy, int N>
SGL_DEVICE void load_floats(const fp32_t* src, fp32_t (&dst)[N]) {
  device::AlignedVector<fp32_t, kWidth> v;
#pragma unroll
  for (int i = 0; i < N; i += kWidth) {
    device::cache::load_hinted<kPolicy>(v, reinterpret_cast<const decltype(v)*>(src + i));
#pragma unroll
    for (int j = 0; j < kWidth; ++j) dst[i + j] = v[j];
  }
}

/// Floats per cos/sin load of the decode kernel for kCosSin values per chunk: the widest vector
/// (at most 16 bytes) a chunk's values fill.
template <int kCosSin>
inline constexpr int kCosSinWidth = kCosSin % 4 == 0 ? 4 : (kCosSin % 2 == 0 ? 2 : 1);

/// dst[0..N) = src[0..N) from the fp32 cache, with the widest loads `vec_bytes` allows and the L2
/// eviction priority kPolicy.
template <device::cache::Evict kPolicy, int N>
SGL_DEVICE void load_cos_sin(const fp32_t* src, fp32_t (&dst)[N], int vec_bytes) {
  if constexpr (N % 4 == 0) {
    if (vec_bytes == 16) return load_floats<4, kPolicy>(src, dst);
  }
  if constexpr (N % 2 == 0) {
    if (vec_bytes >= 8) return load_floats<2, kPolicy>(src, dst);
  }
  load_floats<1, kPolicy>(src, dst);
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
    part[0] = *reinterpret_cast<const Vec*>(head + first);
    if constexpr (kNeox) part[1] = *reinterpret_cast<const Vec*>(head + half + first);
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
/// rope_dim / 2) with the L2 eviction priority kPolicy.
template <device::cache::Evict kPolicy, int kCosSin, typename T>
SGL_DEVICE void load_chunk_cos_sin(const RopeParams<T>& p,
                                   std::int64_t pos,
                                   int chunk,
                                   int half,
                                   fp32_t (&cos_v)[kCosSin],
                                   fp32_t (&sin_v)[kCosSin]) {
  const fp32_t* row = p.cos_sin + pos * p.rope_dim;
  load_cos_sin<kPolicy>(row + chunk * kCosSin, cos_v, p.cs_vec_bytes);
  load_cos_sin<kPolicy>(row + half + chunk * kCosSin, sin_v, p.cs_vec_bytes);
}

/// Heads head0, head0 + step, ... of one token whose q and k rows start at q_token and k_token,
/// and the chunk (elements from `first`; NeoX: and from first + half) a thread owns of each.
template <typename T>
struct TokenHeads {
  const RopeParams<T>& p;
  T* q_token;
  T* k_token;
  int step;
  int first;
  int half;

  /// Loads the chunks of heads head0 + u * step (u < kN; those < num_heads) into x[u].
  template <int kN, bool kNeox, int kVec>
  SGL_DEVICE void load(HeadChunk<T, kNeox, kVec> (&x)[kN], int head0) const {
    for_each<kN>(head0, [&](int u, T* head) { x[u].load(head, first, half); });
  }

  /// Rotates the chunks load() loaded and stores them back to their heads.
  template <int kN, bool kNeox, int kVec, int kCosSin>
  SGL_DEVICE void rotate_store(HeadChunk<T, kNeox, kVec> (&x)[kN],
                               int head0,
                               const fp32_t (&cos_v)[kCosSin],
                               const fp32_t (&sin_v)[kCosSin]) const {
    for_each<kN>(head0,
                 [&](int u, T* head) { x[u].rotate_store(head, first, half, cos_v, sin_v); });
  }

 private:
  template <int kN, typename Fn>
  SGL_DEVICE void for_each(int head0, const Fn& fn) const {
#pragma unroll
    for (int u = 0; u < kN; ++u) {
      const int head = head0 + u * step;
      if (head < p.num_heads) fn(u, head_address(p, q_token, k_token, head));
    }
  }
};

/// Threads: blockDim.x = chunks * heads_per_pass for one token, blockDim.y tokens per block; the
/// grid strides over groups of blockDim.y tokens. Thread (c, slot) owns chunk c of every head
/// slot, slot + heads_per_pass, ... of its token: it reads the token's position and its cos/sin
/// values once, then rotates those heads (Config::unroll(kNeox) at a time, loads first; the first
/// heads' loads are issued before the cos/sin values are needed, the next token's position is
/// prefetched). NeoX: chunk c is
/// elements [c*V, c*V+V) of the first half of the rotary part and the same of the second half;
/// GPT-J: elements [c*V, c*V+V) of the rotary part (V/2 interleaved pairs). Tokens whose
/// position is outside [0, max_pos) are left unchanged.
template <typename Config, typename T, bool kNeox, int kVecBytes, typename Pos, bool kUsePDL>
__global__ void __maxnreg__(Config::kMaxRegs) rope_kernel(const RopeParams<T> p) {
  constexpr int kVec = kVecBytes / static_cast<int>(sizeof(T));  // elements per vector
  using Chunk = HeadChunk<T, kNeox, kVec>;
  constexpr int kCosSin = Chunk::kCosSin;
  constexpr int kUnroll = Config::unroll(kNeox);

  const int chunk = static_cast<int>(threadIdx.x) % p.chunks;
  const int slot = static_cast<int>(threadIdx.x) / p.chunks;
  const int half = p.rope_dim / 2;
  const int first = chunk * kVec;  // the chunk's first element (first half for NeoX)
  const int heads_step = p.heads_per_pass;

  device::PDLWaitPrimary<kUsePDL>();  // q, k and positions may come from the previous kernel

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

    const TokenHeads<T> heads{p, q_token, k_token, heads_step, first, half};
    Chunk x[kUnroll];
    int head0 = slot;  // < num_heads: heads_per_pass <= num_heads
    heads.load(x, head0);
    if (pos < 0 || pos >= p.max_pos) continue;  // left unchanged; the cache is never read
    fp32_t cos_v[kCosSin];
    fp32_t sin_v[kCosSin];
    load_chunk_cos_sin<device::cache::Evict::kNormal>(p, pos, chunk, half, cos_v, sin_v);

    while (true) {
      heads.rotate_store(x, head0, cos_v, sin_v);
      head0 += heads_step * kUnroll;
      if (head0 >= p.num_heads) break;
      heads.load(x, head0);
    }
  }

  device::PDLTriggerSecondary<kUsePDL>();
}

/// The lean plan: no loop and no prefetch, so few registers and many resident threads. Block
/// (chunks, heads per block), grid (tokens, head blocks): thread (c, y) of block (t, b) rotates
/// chunk c (as in rope_kernel) of heads b * H + y + u * blockDim.y (u < kLeanHeads, H =
/// blockDim.y * kLeanHeads) of token t, so a warp covers neighbouring heads of one token and the
/// heads of a block share one row of the cos/sin cache. The position is read first; the q/k
/// loads go out with the cos/sin loads once it arrives (earlier q/k loads were slower on H100,
/// docs/kernels/rope.md). kCosSinPolicy: the L2 eviction priority of the cos/sin loads.
template <typename Config,
          typename T,
          bool kNeox,
          int kVecBytes,
          typename Pos,
          bool kUsePDL,
          device::cache::Evict kCosSinPolicy>
__global__ void __launch_bounds__(kRopeMaxBlock) rope_lean_kernel(const RopeParams<T> p) {
  constexpr int kVec = kVecBytes / static_cast<int>(sizeof(T));
  using Chunk = HeadChunk<T, kNeox, kVec>;
  constexpr int kCosSin = Chunk::kCosSin;
  constexpr int kHeads = Config::kLeanHeads;

  const int chunk = static_cast<int>(threadIdx.x);
  const int half = p.rope_dim / 2;
  const int first = chunk * kVec;
  const int head0 = static_cast<int>(blockIdx.y * blockDim.y * kHeads + threadIdx.y);
  const int heads_step = static_cast<int>(blockDim.y);
  const std::int64_t token = blockIdx.x;

  // Release the next kernel before waiting: its launch overlaps this kernel's wait as well as
  // its work (its own PDLWaitPrimary still waits for this grid to end).
  device::PDLTriggerSecondary<kUsePDL>();
  device::PDLWaitPrimary<kUsePDL>();
  if (head0 >= p.num_heads) return;
  const auto* positions = static_cast<const Pos*>(p.positions);
  const auto pos = static_cast<std::int64_t>(positions[token * p.position_stride]);
  T* const q_token = p.q + token * p.q_token_stride;
  T* const k_token = p.k + token * p.k_token_stride;
  const TokenHeads<T> heads{p, q_token, k_token, heads_step, first, half};
  Chunk x[kHeads];
  heads.load(x, head0);
  if (pos < 0 || pos >= p.max_pos) return;  // left unchanged; the cache is never read
  fp32_t cos_v[kCosSin];
  fp32_t sin_v[kCosSin];
  load_chunk_cos_sin<kCosSinPolicy>(p, pos, chunk, half, cos_v, sin_v);
  heads.rotate_store(x, head0, cos_v, sin_v);
}

/// The decode kernel: the lean plan for decode calls with the rotary size kRopeDim known at
/// compile time (a power of two) and one head per thread. With the half-row offset and the
/// cos/sin row stride as constants, nothing between the position's arrival and the q/k and
/// cos/sin loads reads a parameter or forms an address, where the runtime-size lean kernel does
/// both and is slower at decode sizes (docs/kernels/rope.md). cos/sin rows must be aligned to
/// kCosSinWidth floats (the launch checks). Tokens whose position is outside [0, max_pos) are
/// left unchanged.
template <typename T, bool kNeox, int kVecBytes, int kRopeDim, typename Pos, bool kUsePDL>
__global__ void __launch_bounds__(kRopeMaxBlock) rope_decode_kernel(const RopeParams<T> p) {
  constexpr int kVec = kVecBytes / static_cast<int>(sizeof(T));
  using Chunk = HeadChunk<T, kNeox, kVec>;
  constexpr int kCosSin = Chunk::kCosSin;
  constexpr int kHalf = kRopeDim / 2;
  static_assert(kRopeDim > 0 && (kRopeDim & (kRopeDim - 1)) == 0, "kRopeDim: a power of two");

  // Addresses and parameters before the PDL calls, so they are ready when the wait ends.
  const int chunk = static_cast<int>(threadIdx.x);
  const int first = chunk * kVec;
  const int head0 = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  const std::int64_t token = blockIdx.x;
  const int num_heads = p.num_heads;
  const auto max_pos = static_cast<std::uint64_t>(p.max_pos);
  const auto* const position = static_cast<const Pos*>(p.positions) + token * p.position_stride;
  const bool is_q = head0 < p.num_q_heads;
  const std::int64_t head_in_tensor = is_q ? head0 : head0 - p.num_q_heads;
  T* const head = (is_q ? p.q : p.k) + token * (is_q ? p.q_token_stride : p.k_token_stride) +
                  head_in_tensor * (is_q ? p.q_head_stride : p.k_head_stride);
  const fp32_t* const cos_sin = p.cos_sin + chunk * kCosSin;
  // Pinned here: without it the compiler forms them after the wait and the position check.
  asm volatile("" ::"l"(position), "l"(head), "l"(cos_sin), "l"(max_pos), "r"(first));

  device::PDLTriggerSecondary<kUsePDL>();  // as rope_lean_kernel
  device::PDLWaitPrimary<kUsePDL>();
  if (head0 >= num_heads) return;
  // Negative positions become large unsigned values: one comparison covers both ends.
  const auto pos = static_cast<std::uint64_t>(static_cast<std::int64_t>(*position));
  if (pos >= max_pos) return;
  Chunk x;
  x.load(head, first, kHalf);
  fp32_t cos_v[kCosSin];
  fp32_t sin_v[kCosSin];
  const fp32_t* const row = cos_sin + pos * kRopeDim;
  load_floats<kCosSinWidth<kCosSin>, device::cache::Evict::kNormal>(row, cos_v);
  load_floats<kCosSinWidth<kCosSin>, device::cache::Evict::kNormal>(row + kHalf, sin_v);
  x.rotate_store(head, first, kHalf, cos_v, sin_v);
}

}  // namespace
