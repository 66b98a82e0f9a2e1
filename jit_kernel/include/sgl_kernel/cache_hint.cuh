// L2 eviction hints on global loads (SM80+): device::cache::load_hinted reads one 4-, 8- or
// 16-byte vector and tells L2 how long to keep its lines: evict-first for data a kernel streams
// through once (so it does not push out what is reused), evict-last for a small table that many
// threads read (so streamed data does not push it out). Other sizes, and architectures below
// SM80, load plainly (same values, no hint).
#pragma once

#include <sgl_kernel/utils.cuh>  // For SGL_DEVICE

#include <cstdint>

namespace device::cache {

/// How long L2 should keep the lines a load brings in.
enum class Evict { kNormal, kFirst, kLast };

/// Loads `*ptr` (a Vec of 4, 8 or 16 bytes; `ptr` aligned to its size) into `out` with the L2
/// eviction priority kPolicy; evict-first loads also skip ahead of other data in L1.
template <Evict kPolicy, typename Vec>
SGL_DEVICE void load_hinted(Vec& out, const Vec* ptr) {
  constexpr int kBytes = static_cast<int>(sizeof(Vec));
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (kPolicy != Evict::kNormal && (kBytes == 16 || kBytes == 8 || kBytes == 4)) {
    std::uint64_t policy;
    if constexpr (kPolicy == Evict::kFirst) {
      asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    } else {
      asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
    }
    std::uint32_t words[kBytes / 4];
    if constexpr (kBytes == 16) {
      if constexpr (kPolicy == Evict::kFirst) {
        asm volatile("ld.global.L1::evict_first.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                     : "=r"(words[0]), "=r"(words[1]), "=r"(words[2]), "=r"(words[3])
                     : "l"(ptr), "l"(policy));
      } else {
        asm volatile("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                     : "=r"(words[0]), "=r"(words[1]), "=r"(words[2]), "=r"(words[3])
                     : "l"(ptr), "l"(policy));
      }
    } else if constexpr (kBytes == 8) {
      if constexpr (kPolicy == Evict::kFirst) {
        asm volatile("ld.global.L1::evict_first.L2::cache_hint.v2.u32 {%0, %1}, [%2], %3;"
                     : "=r"(words[0]), "=r"(words[1])
                     : "l"(ptr), "l"(policy));
      } else {
        asm volatile("ld.global.L2::cache_hint.v2.u32 {%0, %1}, [%2], %3;"
                     : "=r"(words[0]), "=r"(words[1])
                     : "l"(ptr), "l"(policy));
      }
    } else {
      if constexpr (kPolicy == Evict::kFirst) {
        asm volatile("ld.global.L1::evict_first.L2::cache_hint.u32 %0, [%1], %2;"
                     : "=r"(words[0])
                     : "l"(ptr), "l"(policy));
      } else {
        asm volatile("ld.global.L2::cache_hint.u32 %0, [%1], %2;"
                     : "=r"(words[0])
                     : "l"(ptr), "l"(policy));
      }
    }
    __builtin_memcpy(&out, words, kBytes);
    return;
  }
#endif
  out = *ptr;
}

}  // namespace device::cache
