// The custom all-reduce kernel: the IPC buffer layout, the barrier and the one-shot / two-shot
// reduction (the protocol is described in custom_all_reduce.cuh). The host side is there too.
#pragma once

#include <sgl_kernel/signal.cuh>  // For signal::store_release_sys, signal::wait_at_least_sys
#include <sgl_kernel/type.cuh>    // For device::cast
#include <sgl_kernel/utils.cuh>   // For PDLWaitPrimary, PDLTriggerSecondary, fp16_t
#include <sgl_kernel/vec.cuh>     // For AlignedVector

#include <cstddef>
#include <cstdint>

namespace {

constexpr int kMaxWorld = 8;
constexpr int kMaxBlocks = 64;  // flag slots per phase; also the largest grid
constexpr int kThreads = 512;   // threads per block
constexpr int kPhases = 2;      // barriers per call: after the copy-in, after the reduce-scatter
constexpr std::int64_t kMaxBytesLimit = std::int64_t{1} << 30;  // per message (1 GiB)

// Byte offsets inside each rank's buffer (identical on every rank).
constexpr std::size_t kFlagsOffset = 256;
constexpr std::size_t kFlagsBytes = sizeof(std::uint64_t) * kPhases * kMaxBlocks * kMaxWorld;
constexpr std::size_t kStagingOffset = (kFlagsOffset + kFlagsBytes + 4095) / 4096 * 4096;
constexpr std::int64_t kStagingAlign = 256;

/// Only the owning rank touches it (peers never read it).
struct LocalState {
  std::uint64_t epoch;  // calls completed on this rank (written by the last block of each call)
  std::uint32_t done;   // blocks of the running call that have finished
};
static_assert(sizeof(LocalState) <= kFlagsOffset, "LocalState must fit before the flags");

struct AllReduceParams {
  void* buffers[kMaxWorld];  // every rank's buffer as mapped in this process; [rank] is ours
  void* out;
  const void* in;
  std::int64_t num_elements;
  std::int64_t staging_bytes;  // bytes of one staging half
  int rank;
};

template <typename T>
using Pack = device::AlignedVector<T, 16 / sizeof(T)>;  // 16 bytes

SGL_DEVICE std::uint64_t* flag_slot(void* buffer, int phase, int block, int sender) {
  auto* flags = static_cast<std::uint64_t*>(device::pointer::offset(buffer, kFlagsOffset));
  return flags + (static_cast<std::size_t>(phase) * kMaxBlocks + block) * kMaxWorld + sender;
}

SGL_DEVICE void* staging_half(void* buffer, std::uint64_t epoch, std::int64_t staging_bytes) {
  const auto half = static_cast<std::int64_t>(epoch & 1u);
  return device::pointer::offset(buffer, kStagingOffset, half * staging_bytes);
}

/// Block blockIdx.x meets the same block of every rank: all writes this block made before are
/// visible to those blocks after the barrier, and theirs to this block.
template <int kWorld>
SGL_DEVICE void cross_gpu_barrier(const AllReduceParams& p, int phase, std::uint64_t epoch) {
  __syncthreads();  // the block's writes happen before thread q's release below
  if (threadIdx.x < kWorld) {
    const int peer = static_cast<int>(threadIdx.x);
    device::signal::store_release_sys(flag_slot(p.buffers[peer], phase, blockIdx.x, p.rank), epoch);
    device::signal::wait_at_least_sys(flag_slot(p.buffers[p.rank], phase, blockIdx.x, peer), epoch);
  }
  __syncthreads();  // thread q's acquire happens before every thread's reads below
}

/// Pack `index` of the input; the partial last pack is zero-padded (the padding is summed and
/// never stored).
template <typename T>
SGL_DEVICE Pack<T> load_input(const T* in, std::int64_t index, std::int64_t num_elements) {
  constexpr int kN = static_cast<int>(Pack<T>::kSize);
  Pack<T> pack;
  const std::int64_t first = index * kN;
  if (first + kN <= num_elements) {
    pack.load(in, index);
  } else {
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      pack[k] = first + k < num_elements ? in[first + k] : device::cast<T>(0.0f);
    }
  }
  return pack;
}

/// Stores pack `index` of the output, only the elements below num_elements.
template <typename T>
SGL_DEVICE void store_output(T* out,
                             std::int64_t index,
                             std::int64_t num_elements,
                             const Pack<T>& pack) {
  constexpr int kN = static_cast<int>(Pack<T>::kSize);
  const std::int64_t first = index * kN;
  if (first + kN <= num_elements) {
    pack.store(out, index);
  } else {
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      if (first + k < num_elements) out[first + k] = pack[k];
    }
  }
}

/// Pack `index` of a staging half, loaded at L2 (`ld.global.cg`): staging data is read once per
/// call and changes between calls and phases, so it never goes through the SM's L1.
template <typename T>
SGL_DEVICE Pack<T> load_staged(const T* staging, std::int64_t index) {
  static_assert(sizeof(Pack<T>) == sizeof(uint4), "a pack is 16 bytes");
  Pack<T> pack;
  *reinterpret_cast<uint4*>(pack.data()) = __ldcg(reinterpret_cast<const uint4*>(staging) + index);
  return pack;
}

/// Loads pack `index` of every rank's staging half and sums them in fp32, in rank order 0..W-1
/// (the same order on every rank, so every rank rounds the same value), rounding once.
template <typename T, int kWorld>
SGL_DEVICE Pack<T> sum_packs(const T* const (&staging)[kWorld], std::int64_t index) {
  constexpr int kN = static_cast<int>(Pack<T>::kSize);
  Pack<T> packs[kWorld];
#pragma unroll
  for (int q = 0; q < kWorld; ++q) packs[q] = load_staged(staging[q], index);  // all in flight
  Pack<T> sum;
#pragma unroll
  for (int k = 0; k < kN; ++k) {
    float acc = device::cast<fp32_t>(packs[0][k]);
#pragma unroll
    for (int q = 1; q < kWorld; ++q) acc += device::cast<fp32_t>(packs[q][k]);
    sum[k] = device::cast<T>(acc);
  }
  return sum;
}

/// The last block of the call to finish advances the rank's epoch (every block read the old
/// value at its start, before it arrived here), so the next call sees epoch + 1.
SGL_DEVICE void finish_call(LocalState* state, std::uint64_t epoch) {
  if (threadIdx.x == 0) {
    __threadfence();  // this thread's read of state->epoch is ordered before its arrival
    if (atomicAdd(&state->done, 1u) + 1u == gridDim.x) {
      __threadfence();  // every block's arrival (and read) is ordered before the update
      state->done = 0;
      state->epoch = epoch;
    }
  }
}

/// One launch = one all-reduce call. Grid: the same on every rank (from the size, the world
/// size and the agreed max_blocks), kThreads threads; pack i (16 bytes) of the message is
/// handled by thread i mod (grid * kThreads) in every phase, so each thread only reads staging
/// data that the same (block, thread) of each rank wrote, and only writes output elements whose
/// input it has already read (in place, out == in, is safe).
template <typename T, int kWorld, bool kTwoShot, bool kUsePDL>
__global__ void __launch_bounds__(kThreads, 1)
    custom_all_reduce_kernel(const __grid_constant__ AllReduceParams p) {
  constexpr int kN = static_cast<int>(Pack<T>::kSize);
  __shared__ std::uint64_t s_epoch;

  device::PDLWaitPrimary<kUsePDL>();  // the input and the previous call's state are ready

  auto* const state = static_cast<LocalState*>(p.buffers[p.rank]);
  if (threadIdx.x == 0) s_epoch = state->epoch + 1;
  __syncthreads();
  const std::uint64_t epoch = s_epoch;

  const T* staging[kWorld];
#pragma unroll
  for (int q = 0; q < kWorld; ++q) {
    staging[q] = static_cast<const T*>(staging_half(p.buffers[q], epoch, p.staging_bytes));
  }
  T* const own = static_cast<T*>(staging_half(p.buffers[p.rank], epoch, p.staging_bytes));
  const T* const in = static_cast<const T*>(p.in);
  T* const out = static_cast<T*>(p.out);
  const std::int64_t n = p.num_elements;
  const std::int64_t num_packs = (n + kN - 1) / kN;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t start = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;

  if constexpr (!kTwoShot) {
    for (std::int64_t i = start; i < num_packs; i += stride) load_input(in, i, n).store(own, i);
    cross_gpu_barrier<kWorld>(p, 0, epoch);
    for (std::int64_t i = start; i < num_packs; i += stride) {
      store_output(out, i, n, sum_packs<T, kWorld>(staging, i));
    }
  } else {
    // Chunk c (packs [c * chunk, (c + 1) * chunk)) is reduced by rank c.
    const std::int64_t chunk = (num_packs + kWorld - 1) / kWorld;
    for (std::int64_t j = start; j < chunk; j += stride) {
#pragma unroll
      for (int c = 0; c < kWorld; ++c) {
        const std::int64_t i = c * chunk + j;
        if (i < num_packs) load_input(in, i, n).store(own, i);
      }
    }
    cross_gpu_barrier<kWorld>(p, 0, epoch);
    // Reduce-scatter: our chunk from every rank, the result into our staging (for the peers)
    // and our output. The peers read only their own chunks of our staging meanwhile.
    const std::int64_t mine = static_cast<std::int64_t>(p.rank) * chunk;
    for (std::int64_t j = start; j < chunk && mine + j < num_packs; j += stride) {
      const Pack<T> sum = sum_packs<T, kWorld>(staging, mine + j);
      sum.store(own, mine + j);
      store_output(out, mine + j, n, sum);
    }
    cross_gpu_barrier<kWorld>(p, 1, epoch);
    // All-gather: every other rank's reduced chunk.
    for (std::int64_t j = start; j < chunk; j += stride) {
#pragma unroll
      for (int q = 0; q < kWorld; ++q) {
        const std::int64_t i = q * chunk + j;
        if (q != p.rank && i < num_packs) {
          store_output(out, i, n, load_staged(staging[q], i));
        }
      }
    }
  }

  finish_call(state, epoch);
  device::PDLTriggerSecondary<kUsePDL>();
}

}  // namespace
