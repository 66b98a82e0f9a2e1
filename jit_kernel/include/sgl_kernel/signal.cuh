// System-scope signal flags for synchronising GPUs through peer (CUDA IPC) memory:
// device::signal::store_release_sys, load_acquire_sys, wait_at_least_sys.
//
// A flag is a 64-bit word that only ever grows (an epoch), so it never needs resetting and a
// 64-bit value cannot wrap in practice. The producer publishes with a release store at system
// scope after its writes; the consumer spins with acquire loads until the flag reaches the
// epoch it waits for, after which every write the producer made before the release is visible.
// For a whole CTA: `__syncthreads()` before the release (so the CTA's writes are ordered before
// it) and `__syncthreads()` after the wait (so the acquire orders the CTA's later reads).
#pragma once

#include <sgl_kernel/utils.cuh>  // For SGL_DEVICE

#include <cstdint>

namespace device::signal {

/// `st.release.sys`: stores `value` into `flag` (local or peer memory) after every memory access
/// this thread has made or observed, at system scope (other GPUs, the host).
SGL_DEVICE void store_release_sys(std::uint64_t* flag, std::uint64_t value) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(flag), "l"(value) : "memory");
}

/// `ld.acquire.sys`: reads `flag`; this thread's later memory accesses are ordered after it.
SGL_DEVICE std::uint64_t load_acquire_sys(const std::uint64_t* flag) {
  std::uint64_t value;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(value) : "l"(flag) : "memory");
  return value;
}

/// Spins until `*flag >= target` (acquire at system scope). Flags are monotonic epochs, so a
/// producer that is already ahead (a larger value) also satisfies the wait.
SGL_DEVICE void wait_at_least_sys(const std::uint64_t* flag, std::uint64_t target) {
  while (load_acquire_sys(flag) < target) {
  }
}

}  // namespace device::signal
