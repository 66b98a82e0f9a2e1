// Vectorised memory access: device::AlignedVector<T, N> (one 16-byte or 32-byte load/store).
#pragma once

#include <sgl_kernel/utils.cuh>  // For SGL_DEVICE

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace device {

/// N elements of T stored with alignment sizeof(T) * N, so that a load or store is one vector
/// instruction. N is a power of two and sizeof(T) * N <= 32 (32 bytes only pays off on SM100+;
/// 16 bytes is the portable choice, see kMaxVecBytes). Pointers must be aligned to kBytes.
template <typename T, std::size_t N>
struct AlignedVector {
  static_assert(N > 0 && (N & (N - 1)) == 0, "AlignedVector: N must be a power of two");
  static_assert(sizeof(T) * N <= 32, "AlignedVector: at most 32 bytes");

  static constexpr std::size_t kSize = N;
  static constexpr std::size_t kBytes = sizeof(T) * N;
  using value_type = T;

  /// Loads vector number `offset` of `ptr` (i.e. elements [offset * N, offset * N + N)).
  template <typename U>
  SGL_DEVICE void load(const U* ptr, std::size_t offset = 0) {
    static_assert(std::is_same_v<U, T> || std::is_void_v<U>, "AlignedVector::load: pointer type");
    *this = reinterpret_cast<const AlignedVector*>(ptr)[offset];
  }

  /// Stores into vector number `offset` of `ptr`.
  template <typename U>
  SGL_DEVICE void store(U* ptr, std::size_t offset = 0) const {
    static_assert(std::is_same_v<U, T> || std::is_void_v<U>, "AlignedVector::store: pointer type");
    reinterpret_cast<AlignedVector*>(ptr)[offset] = *this;
  }

  SGL_DEVICE void fill(T value) {
#pragma unroll
    for (std::size_t i = 0; i < N; ++i) m_data[i] = value;
  }

  SGL_DEVICE T& operator[](std::size_t i) { return m_data[i]; }
  SGL_DEVICE const T& operator[](std::size_t i) const { return m_data[i]; }
  SGL_DEVICE T* data() { return m_data; }
  SGL_DEVICE const T* data() const { return m_data; }

  alignas(sizeof(T) * N) T m_data[N];
};

}  // namespace device
