// Choosing a vector width at run time: the widest power-of-two access (in bytes) that is aligned
// for every address, stride and size a kernel will use. Host-only, no CUDA needed.
//
//   const auto width = host::widest_common_alignment(16, {host::address_bits(src),
//                                                         row_stride_bytes, row_bytes});
//   switch (width) { case 16: ...; case 8: ...; }
#pragma once

#include <cstdint>
#include <initializer_list>

namespace host {

/// The largest power of two <= `cap` (itself a power of two) that divides every entry of
/// `values`. A zero entry (e.g. the stride of a dimension of size <= 1) constrains nothing; a
/// negative entry counts by its magnitude (two's complement keeps the lowest set bit).
constexpr std::int64_t widest_common_alignment(std::int64_t cap,
                                               std::initializer_list<std::int64_t> values) {
  std::uint64_t bits = static_cast<std::uint64_t>(cap);
  for (const std::int64_t value : values) bits |= static_cast<std::uint64_t>(value);
  return static_cast<std::int64_t>(bits & (~bits + 1));  // the lowest set bit
}

/// A pointer as an integer, for widest_common_alignment.
inline std::int64_t address_bits(const void* ptr) {
  return static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(ptr));
}

}  // namespace host
