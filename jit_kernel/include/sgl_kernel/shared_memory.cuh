// Shared memory by address: the 32-bit shared-window address of a __shared__ object, and fp32
// loads and stores through such an address. A kernel can compute an address early, keep it in a
// register and access the word much later (impl/row/reduce.cuh's CtaSumSlots does).
#pragma once

#include <sgl_kernel/utils.cuh>  // For SGL_DEVICE

#include <cstdint>

namespace device {

/// The shared-window address of `shared_object`, which must live in shared memory.
SGL_DEVICE std::uint32_t shared_address(const void* shared_object) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(shared_object));
}

/// Stores `value` at the shared-window address `address` (4-byte aligned).
SGL_DEVICE void store_shared(std::uint32_t address, float value) {
  asm volatile("st.shared.f32 [%0], %1;" ::"r"(address), "f"(value) : "memory");
}

/// The fp32 word at the shared-window address `address` (4-byte aligned).
SGL_DEVICE float load_shared(std::uint32_t address) {
  float value;
  asm volatile("ld.shared.f32 %0, [%1];" : "=f"(value) : "r"(address) : "memory");
  return value;
}

}  // namespace device
