// CUDA IPC: device memory that the other processes of one host map into their address space.
// host::ipc::allocate_exportable, free_exportable, export_handle, open_handle, close_handle.
//
// The owner allocates with cudaMalloc (IPC needs a plain cudaMalloc allocation, not a pool),
// exports a 64-byte handle, and sends it to the other processes by any means (e.g.
// torch.distributed); each of them opens it, which maps the owner's allocation into its own
// address space on its own GPU (peer access over NVLink or PCIe). Teardown order: every
// importer closes its mapping before the owner frees the allocation.
#pragma once

#include <sgl_kernel/utils.h>      // For DebugInfo, panic
#include <sgl_kernel/runtime.cuh>  // For runtime::details::DeviceGuard

#include <cuda_runtime.h>

#include <array>
#include <cstddef>
#include <cstring>

namespace host::ipc {

inline constexpr std::size_t kHandleBytes = sizeof(cudaIpcMemHandle_t);
static_assert(kHandleBytes == 64, "cudaIpcMemHandle_t is 64 bytes");

/// The exported handle of an allocation, as raw bytes (what travels between processes).
using HandleBytes = std::array<char, kHandleBytes>;

/// Panics with "<what> failed: <CUDA error name>: <text>" and clears CUDA's (non-sticky) last
/// error, so a failed IPC call does not resurface in an unrelated later check.
inline void check(cudaError_t error, const char* what, DebugInfo location = {}) {
  if (error != cudaSuccess) [[unlikely]] {
    static_cast<void>(cudaGetLastError());
    panic(location, what, " failed: ", cudaGetErrorName(error), ": ", cudaGetErrorString(error));
  }
}

/// cudaMalloc `bytes` on `device`, zero-filled before it returns (so a peer that maps it never
/// sees stale contents).
inline void* allocate_exportable(int device, std::size_t bytes) {
  runtime::details::DeviceGuard guard(device);
  void* ptr = nullptr;
  check(cudaMalloc(&ptr, bytes), "cudaMalloc of the IPC buffer");
  cudaError_t error = cudaMemset(ptr, 0, bytes);
  if (error == cudaSuccess) error = cudaDeviceSynchronize();
  if (error != cudaSuccess) {
    cudaFree(ptr);
    check(error, "zero-filling the IPC buffer");
  }
  return ptr;
}

/// Frees an allocation made by allocate_exportable (after every importer closed its mapping).
/// Returns the CUDA error instead of throwing (teardown paths).
inline cudaError_t free_exportable(int device, void* ptr) noexcept {
  if (ptr == nullptr) return cudaSuccess;
  int previous = 0;
  cudaGetDevice(&previous);
  cudaSetDevice(device);
  const cudaError_t error = cudaFree(ptr);
  cudaSetDevice(previous);
  return error;
}

/// The handle other processes open to map `ptr` (the base of a cudaMalloc allocation).
inline HandleBytes export_handle(int device, void* ptr) {
  runtime::details::DeviceGuard guard(device);
  cudaIpcMemHandle_t handle{};
  check(cudaIpcGetMemHandle(&handle, ptr), "cudaIpcGetMemHandle");
  HandleBytes bytes{};
  std::memcpy(bytes.data(), &handle, kHandleBytes);
  return bytes;
}

/// Maps another process's allocation (its 64 handle bytes) on `device`, enabling peer access.
/// Fails when the GPUs cannot access each other (no P2P) or the handle comes from this process.
inline void* open_handle(int device, const char* handle_bytes, const char* what) {
  runtime::details::DeviceGuard guard(device);
  cudaIpcMemHandle_t handle{};
  std::memcpy(&handle, handle_bytes, kHandleBytes);
  void* ptr = nullptr;
  check(cudaIpcOpenMemHandle(&ptr, handle, cudaIpcMemLazyEnablePeerAccess), what);
  return ptr;
}

/// Unmaps a pointer returned by open_handle. Returns the CUDA error instead of throwing.
inline cudaError_t close_handle(int device, void* ptr) noexcept {
  if (ptr == nullptr) return cudaSuccess;
  int previous = 0;
  cudaGetDevice(&previous);
  cudaSetDevice(device);
  const cudaError_t error = cudaIpcCloseMemHandle(ptr);
  cudaSetDevice(previous);
  return error;
}

}  // namespace host::ipc
