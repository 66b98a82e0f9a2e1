// custom_all_reduce: sum all-reduce of one tensor across 2..8 GPUs of one host through CUDA IPC
// peer buffers. fp16 / bf16 / fp32; fp32 accumulation in rank order, so every rank gets the same
// bits. One-shot (each rank reads every peer's copy of the whole message) or two-shot
// (reduce-scatter, then all-gather of the reduced chunks), chosen per call by size.
//
// Each rank owns one cudaMalloc buffer that every other rank maps (CUDA IPC):
//   [LocalState | flags[phase][block][sender] | staging half 0 | staging half 1]
// A call with epoch e (the rank's device-side call counter + 1, the same on every rank because
// every rank makes the same calls) copies its input into staging half (e & 1) of its own buffer,
// meets the same block of every rank at a barrier (block b writes e into flags[phase][b][rank]
// of every peer with a system-scope release and waits, with acquire loads, until its own
// flags[phase][b][*] reach e), reads the peers' staging halves, sums, and writes the output.
// Flags are monotonic epochs: never reset, reusable across calls and CUDA-graph replays.
//
// Why one barrier (two for two-shot) per call suffices: call e+2 overwrites staging half (e & 1)
// only after this rank's call e+1 kernel has finished, and that kernel waited at a barrier for a
// block of every peer's call e+1 kernel, which starts only after the peer's call e kernel (all of
// its reads of our half (e & 1)) has finished. Calls e and e+1 use different halves. Each block
// only reads data that the same block index of each peer wrote before that barrier (identical
// partition on every rank), so blocks pair up by index. A peer can be at most one call ahead, and
// flags compare with >=, so an early flag of call e+1 also satisfies a wait of call e.
// Requirement that follows: the calls of one communicator run in one stream order (one stream, or
// streams ordered by events), identically on every rank, like NCCL.
#include <sgl_kernel/tensor.h>     // For TensorMatcher, SymbolicDType, SymbolicDevice, data_address
#include <sgl_kernel/utils.h>      // For RuntimeCheck, Panic, div_ceil, dtype_bytes
#include <sgl_kernel/ipc.cuh>      // For ipc::allocate_exportable, export_handle, open_handle, ...
#include <sgl_kernel/runtime.cuh>  // For runtime::details::DeviceGuard
#include <sgl_kernel/signal.cuh>   // For signal::store_release_sys, signal::wait_at_least_sys
#include <sgl_kernel/type.cuh>     // For device::cast
#include <sgl_kernel/utils.cuh>    // For LaunchKernel, PDLWaitPrimary, PDLTriggerSecondary, fp16_t
#include <sgl_kernel/vec.cuh>      // For AlignedVector

#include <cuda_runtime.h>
#include <dlpack/dlpack.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/string.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

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

// ------------------------------------------------------------------------------------ host

constexpr std::uint32_t kMagic = 0x43415231u;  // "CAR1": a live communicator

struct Communicator {
  std::uint32_t magic = kMagic;
  int device = 0;
  int rank = 0;
  int world = 0;
  int max_blocks = 0;
  std::int64_t max_bytes = 0;
  std::int64_t staging_bytes = 0;
  std::int64_t one_shot_max_bytes = 0;
  void* buffers[kMaxWorld] = {};  // [rank]: our allocation; others: mapped peers (open_peers)
  bool peers_open = false;
};

Communicator& get_communicator(std::int64_t handle) {
  using namespace host;
  RuntimeCheck(handle != 0, "custom_all_reduce: this CustomAllReduce is closed");
  auto* comm = reinterpret_cast<Communicator*>(handle);
  RuntimeCheck(comm->magic == kMagic, "custom_all_reduce: not a live communicator handle");
  return *comm;
}

/// Allocates this rank's IPC buffer (zero-filled) and returns the communicator handle.
std::int64_t create(std::int64_t device,
                    std::int64_t rank,
                    std::int64_t world,
                    std::int64_t max_bytes,
                    std::int64_t one_shot_max_bytes,
                    std::int64_t max_blocks) {
  using namespace host;
  RuntimeCheck(world >= 2 && world <= kMaxWorld,
               "custom_all_reduce: world size must be 2..",
               kMaxWorld,
               ", got ",
               world);
  RuntimeCheck(
      rank >= 0 && rank < world, "custom_all_reduce: rank ", rank, " not in [0, ", world, ")");
  RuntimeCheck(device >= 0, "custom_all_reduce: bad device index ", device);
  RuntimeCheck(max_bytes > 0 && max_bytes <= kMaxBytesLimit,
               "custom_all_reduce: max_bytes must be in [1, ",
               kMaxBytesLimit,
               "], got ",
               max_bytes);
  RuntimeCheck(one_shot_max_bytes >= 0,
               "custom_all_reduce: one_shot_max_bytes must be >= 0, got ",
               one_shot_max_bytes);
  RuntimeCheck(max_blocks >= 1 && max_blocks <= kMaxBlocks,
               "custom_all_reduce: max_blocks must be in [1, ",
               kMaxBlocks,
               "], got ",
               max_blocks);
  auto comm = std::make_unique<Communicator>();
  comm->device = static_cast<int>(device);
  comm->rank = static_cast<int>(rank);
  comm->world = static_cast<int>(world);
  comm->max_blocks = static_cast<int>(max_blocks);
  comm->max_bytes = max_bytes;
  comm->one_shot_max_bytes = one_shot_max_bytes;
  comm->staging_bytes = div_ceil(max_bytes, kStagingAlign) * kStagingAlign;
  const auto total = kStagingOffset + 2 * static_cast<std::size_t>(comm->staging_bytes);
  comm->buffers[rank] = ipc::allocate_exportable(comm->device, total);
  return reinterpret_cast<std::int64_t>(comm.release());
}

/// The 64-byte IPC handle of this rank's buffer, for the other ranks' open_peers.
tvm::ffi::Bytes ipc_handle(std::int64_t handle) {
  Communicator& comm = get_communicator(handle);
  const auto bytes = host::ipc::export_handle(comm.device, comm.buffers[comm.rank]);
  return tvm::ffi::Bytes(bytes.data(), bytes.size());
}

/// Unmaps every opened peer buffer; returns the first error (all are attempted).
cudaError_t unmap_peers(Communicator& comm) noexcept {
  cudaError_t first = cudaSuccess;
  for (int q = 0; q < comm.world; ++q) {
    if (q == comm.rank || comm.buffers[q] == nullptr) continue;
    const cudaError_t error = host::ipc::close_handle(comm.device, comm.buffers[q]);
    if (first == cudaSuccess) first = error;
    comm.buffers[q] = nullptr;
  }
  comm.peers_open = false;
  return first;
}

/// Maps every other rank's buffer; `handles` holds world x 64 bytes, rank order.
void open_peers(std::int64_t handle, tvm::ffi::Bytes handles) {
  using namespace host;
  Communicator& comm = get_communicator(handle);
  RuntimeCheck(!comm.peers_open, "custom_all_reduce: the peers are already open");
  RuntimeCheck(handles.size() == static_cast<std::size_t>(comm.world) * ipc::kHandleBytes,
               "custom_all_reduce: expected ",
               comm.world,
               " IPC handles of ",
               ipc::kHandleBytes,
               " bytes, got ",
               handles.size(),
               " bytes");
  try {
    for (int q = 0; q < comm.world; ++q) {
      if (q == comm.rank) continue;
      const std::string what = "cudaIpcOpenMemHandle of rank " + std::to_string(q) +
                               "'s buffer on rank " + std::to_string(comm.rank) +
                               " (cuda:" + std::to_string(comm.device) + ")";
      comm.buffers[q] =
          ipc::open_handle(comm.device, handles.data() + q * ipc::kHandleBytes, what.c_str());
    }
  } catch (...) {
    unmap_peers(comm);
    throw;
  }
  comm.peers_open = true;
}

/// Unmaps the peers' buffers (every rank must do this before any rank calls destroy).
void close_peers(std::int64_t handle) {
  Communicator& comm = get_communicator(handle);
  host::ipc::check(unmap_peers(comm), "cudaIpcCloseMemHandle");
}

/// Unmaps the peers (if still mapped), frees this rank's buffer and the communicator.
void destroy(std::int64_t handle) {
  Communicator& comm = get_communicator(handle);
  const cudaError_t unmapped = unmap_peers(comm);
  const cudaError_t freed = host::ipc::free_exportable(comm.device, comm.buffers[comm.rank]);
  comm.magic = 0;
  delete &comm;
  host::ipc::check(unmapped, "cudaIpcCloseMemHandle");
  host::ipc::check(freed, "cudaFree of the IPC buffer");
}

/// This rank's device-side call counter (synchronous copy; for tests and debugging).
std::int64_t epoch(std::int64_t handle) {
  Communicator& comm = get_communicator(handle);
  LocalState state{};
  host::runtime::details::DeviceGuard guard(comm.device);
  host::ipc::check(
      cudaMemcpy(&state, comm.buffers[comm.rank], sizeof(state), cudaMemcpyDeviceToHost),
      "reading the epoch");
  return static_cast<std::int64_t>(state.epoch);
}

template <typename T, int kWorld, bool kUsePDL>
void launch_world(const AllReduceParams& params, bool two_shot, unsigned blocks, DLDevice device) {
  auto* kernel = two_shot ? custom_all_reduce_kernel<T, kWorld, true, kUsePDL>
                          : custom_all_reduce_kernel<T, kWorld, false, kUsePDL>;
  host::LaunchKernel(blocks, kThreads, device).enable_pdl(kUsePDL)(kernel, params);
}

template <typename T, bool kUsePDL>
void launch(const Communicator& comm,
            const AllReduceParams& params,
            bool two_shot,
            DLDevice device) {
  using namespace host;
  constexpr std::int64_t kN = Pack<T>::kSize;
  const std::int64_t packs = div_ceil(params.num_elements, kN);
  const std::int64_t work = two_shot ? div_ceil(packs, std::int64_t{comm.world}) : packs;
  const auto blocks = static_cast<unsigned>(
      std::clamp<std::int64_t>(div_ceil(work, std::int64_t{kThreads}), 1, comm.max_blocks));
  switch (comm.world) {
    case 2:
      return launch_world<T, 2, kUsePDL>(params, two_shot, blocks, device);
    case 3:
      return launch_world<T, 3, kUsePDL>(params, two_shot, blocks, device);
    case 4:
      return launch_world<T, 4, kUsePDL>(params, two_shot, blocks, device);
    case 5:
      return launch_world<T, 5, kUsePDL>(params, two_shot, blocks, device);
    case 6:
      return launch_world<T, 6, kUsePDL>(params, two_shot, blocks, device);
    case 7:
      return launch_world<T, 7, kUsePDL>(params, two_shot, blocks, device);
    case 8:
      return launch_world<T, 8, kUsePDL>(params, two_shot, blocks, device);
    default:
      Panic("custom_all_reduce: unsupported world size ", comm.world);
  }
}

/// out = sum over ranks of input (every rank calls it with the same shape, dtype and algo).
///   input: contiguous CUDA tensor on this communicator's GPU, fp16/bf16/fp32, 16-byte aligned,
///          at most max_bytes bytes; any shape (numel 0 launches nothing).
///   out:   same shape/dtype/device, contiguous, 16-byte aligned; out may be input (in place),
///          any other overlap with input is rejected.
///   algo:  0 auto (one-shot up to one_shot_max_bytes, else two-shot), 1 one-shot, 2 two-shot.
template <bool kUsePDL>
void all_reduce(std::int64_t handle,
                tvm::ffi::TensorView out,
                tvm::ffi::TensorView input,
                std::int64_t algo) {
  using namespace host;
  Communicator& comm = get_communicator(handle);
  auto dtype = SymbolicDType{};
  auto device = SymbolicDevice{};
  TensorMatcher(input.shape())  //
      .with_device<kDLCUDA>(device)
      .with_dtype<fp16_t, bf16_t, fp32_t>(dtype)
      .verify(input, "input")
      .verify(out, "out");
  // The tensors are reduced as flat, contiguous buffers: only the data pointers need 16-byte
  // alignment (rows of any length are fine; the partial last pack is handled).
  for (const auto& [view, name] : {std::pair{&input, "input"}, std::pair{&out, "out"}}) {
    const auto address = reinterpret_cast<std::uintptr_t>(data_address(*view));
    RuntimeCheck(address % 16 == 0,
                 "custom_all_reduce: tensor '",
                 name,
                 "' has a data pointer that is not 16-byte aligned (address % 16 = ",
                 address % 16,
                 "; a view with a storage offset?): pass a fresh or aligned tensor");
  }
  RuntimeCheck(algo >= 0 && algo <= 2,
               "custom_all_reduce: algo code must be 0 (auto), 1 (one-shot) or 2 (two-shot), got ",
               algo);
  RuntimeCheck(comm.peers_open, "custom_all_reduce: the peers' buffers are not open");
  const DLDevice dev = device.unwrap();
  RuntimeCheck(dev.device_id == comm.device,
               "custom_all_reduce: input is on cuda:",
               dev.device_id,
               " but this communicator (rank ",
               comm.rank,
               ") uses cuda:",
               comm.device);
  const std::int64_t n = input.numel();
  const auto elem = static_cast<std::int64_t>(dtype_bytes(dtype.unwrap()));
  const std::int64_t bytes = n * elem;
  RuntimeCheck(bytes <= comm.max_bytes,
               "custom_all_reduce: input has ",
               bytes,
               " bytes (",
               n,
               " elements of ",
               elem,
               " bytes) but this communicator was created with max_bytes=",
               comm.max_bytes);
  const auto in_addr = reinterpret_cast<std::uintptr_t>(data_address(input));
  const auto out_addr = reinterpret_cast<std::uintptr_t>(data_address(out));
  const auto span = static_cast<std::uintptr_t>(bytes);
  RuntimeCheck(in_addr == out_addr || in_addr + span <= out_addr || out_addr + span <= in_addr,
               "custom_all_reduce: out partially overlaps input; pass out=input for an in-place "
               "all-reduce, or a separate tensor");
  if (n == 0) return;

  AllReduceParams params{};
  std::copy(std::begin(comm.buffers), std::end(comm.buffers), std::begin(params.buffers));
  params.out = reinterpret_cast<void*>(out_addr);
  params.in = reinterpret_cast<const void*>(in_addr);
  params.num_elements = n;
  params.staging_bytes = comm.staging_bytes;
  params.rank = comm.rank;
  const bool two_shot = algo == 2 || (algo == 0 && bytes > comm.one_shot_max_bytes);
  // The launch goes to torch's current stream of the communicator's GPU; make that GPU current
  // for it when the caller's current device is another one (a cheap check otherwise).
  int current = 0;
  RuntimeDeviceCheck(cudaGetDevice(&current));
  std::optional<runtime::details::DeviceGuard> guard;
  if (current != comm.device) guard.emplace(comm.device);
  if (dtype.is_type<fp16_t>()) {
    launch<fp16_t, kUsePDL>(comm, params, two_shot, dev);
  } else if (dtype.is_type<bf16_t>()) {
    launch<bf16_t, kUsePDL>(comm, params, two_shot, dev);
  } else {
    launch<fp32_t, kUsePDL>(comm, params, two_shot, dev);
  }
}

}  // namespace
