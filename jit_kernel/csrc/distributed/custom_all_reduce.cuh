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
#include <sgl_kernel/utils.cuh>    // For LaunchKernel, PDLWaitPrimary, PDLTriggerSecondary, fp16_t

#include <cuda_runtime.h>
#include <dlpack/dlpack.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/string.h>

#include "custom_all_reduce_kernel.cuh"  // custom_all_reduce_kernel, AllReduceParams, LocalState, the layout

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace {

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
