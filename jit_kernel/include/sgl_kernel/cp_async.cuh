// Asynchronous global -> shared copies (cp.async, SM80+): device::cp_async::copy16 and wait_all.
// The data goes to shared memory without passing through registers, so a kernel can start a copy
// early and read it much later without holding registers meanwhile. Below SM80 copy16 falls back
// to an ordinary 16-byte load and store (same results, not asynchronous).
#pragma once

#include <sgl_kernel/shared_memory.cuh>  // For shared_address
#include <sgl_kernel/utils.cuh>          // For SGL_DEVICE

#include <cstdint>

namespace device::cp_async {

/// Starts copying 16 bytes from `global_src` to `shared_dst` (both 16-byte aligned). With
/// `fill == false` nothing is read and the 16 bytes are zero-filled (`global_src` must still be a
/// valid address). The data is visible to this thread after wait_all(); to other threads after
/// wait_all() and a barrier.
SGL_DEVICE void copy16(void* shared_dst, const void* global_src, bool fill = true) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const std::uint32_t dst = shared_address(shared_dst);
  const std::uint32_t src_bytes = fill ? 16u : 0u;
  asm volatile(
      "cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(global_src), "r"(src_bytes)
      : "memory");
#else
  uint4 value = make_uint4(0u, 0u, 0u, 0u);
  if (fill) value = *static_cast<const uint4*>(global_src);
  *static_cast<uint4*>(shared_dst) = value;
#endif
}

/// Waits until every copy16 this thread started has landed.
SGL_DEVICE void wait_all() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}

}  // namespace device::cp_async
