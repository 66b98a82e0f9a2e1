// Portable source location for error reporting: `source_location_t`.
#pragma once

#include <version>

#if defined(__cpp_lib_source_location)
#include <source_location>

using source_location_t = std::source_location;

#else
#include <cstdint>

// Fallback for standard libraries without <source_location>: every field is empty.
struct source_location_t {
  static constexpr source_location_t current() noexcept { return {}; }
  constexpr std::uint_least32_t line() const noexcept { return 0; }
  constexpr std::uint_least32_t column() const noexcept { return 0; }
  constexpr const char* file_name() const noexcept { return ""; }
  constexpr const char* function_name() const noexcept { return ""; }
};

#endif
