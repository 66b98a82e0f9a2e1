// Cooperative 1-D memory access: device::tile::Memory<T> (thread i of a group of `tsize` threads
// takes element `i + offset * tsize`, which keeps accesses coalesced).
#pragma once

#include <sgl_kernel/utils.cuh>  // For SGL_DEVICE, kWarpThreads

#include <cstdint>

namespace device::tile {

template <typename T>
struct Memory {
  std::uint32_t tid;    // this thread's index within the group
  std::uint32_t tsize;  // number of threads in the group

  /// One thread on its own: tid 0, size 1.
  SGL_DEVICE static Memory thread() { return {0u, 1u}; }
  /// The lanes of a warp (or of the first `n` lanes).
  SGL_DEVICE static Memory warp(std::uint32_t n = kWarpThreads) {
    return {threadIdx.x % kWarpThreads, n};
  }
  /// The threads of the CTA (x dimension).
  SGL_DEVICE static Memory cta(std::uint32_t n = blockDim.x) { return {threadIdx.x, n}; }

  /// `ptr[tid + offset * tsize]`, in units of T.
  SGL_DEVICE T load(const void* ptr, std::int64_t offset = 0) const {
    return static_cast<const T*>(ptr)[index(offset)];
  }
  SGL_DEVICE void store(void* ptr, const T& value, std::int64_t offset = 0) const {
    static_cast<T*>(ptr)[index(offset)] = value;
  }
  /// True when `tid + offset * tsize < count`.
  SGL_DEVICE bool in_bound(std::int64_t count, std::int64_t offset = 0) const {
    return index(offset) < count;
  }

 private:
  SGL_DEVICE std::int64_t index(std::int64_t offset) const {
    return static_cast<std::int64_t>(tid) + offset * static_cast<std::int64_t>(tsize);
  }
};

}  // namespace device::tile
