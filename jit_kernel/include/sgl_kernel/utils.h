// Host-side essentials: RuntimeCheck, Panic, PanicError, div_ceil, irange, pointer::offset.
// Needs no CUDA: usable from plain C++ translation units.
#pragma once

#include <sgl_kernel/source_location.h>  // For source_location_t

#include <dlpack/dlpack.h>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <ranges>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace host {

template <typename T>
inline constexpr bool dependent_false_v = false;

/// The call site of a check. Used as a trailing defaulted parameter so that the caller's file and
/// line are captured automatically.
struct DebugInfo : source_location_t {
  DebugInfo(source_location_t loc = source_location_t::current()) : source_location_t(loc) {}
};

/// The error thrown by every failed host-side check. tvm-ffi turns it into a Python RuntimeError.
struct PanicError : std::runtime_error {
  using std::runtime_error::runtime_error;

  /// The message without the "Runtime check failed at FILE:LINE: " prefix.
  std::string_view root_cause() const noexcept {
    const std::string_view text = what();
    const auto pos = text.find(": ");
    return pos == std::string_view::npos ? text : text.substr(pos + 2);
  }
};

namespace details {

/// The last path component of `path` (keeps messages short and free of build-machine paths).
inline std::string_view base_name(std::string_view path) {
  const auto pos = path.find_last_of("/\\");
  return pos == std::string_view::npos ? path : path.substr(pos + 1);
}

/// "scale" from "void {anonymous}::scale(tvm::ffi::TensorView, ...) [with T = __half]".
inline std::string_view short_function_name(std::string_view pretty) {
  const auto paren = pretty.find('(');
  std::string_view head = paren == std::string_view::npos ? pretty : pretty.substr(0, paren);
  if (const auto tmpl = head.find('<'); tmpl != std::string_view::npos) head = head.substr(0, tmpl);
  const auto pos = head.find_last_of(": ");
  return pos == std::string_view::npos ? head : head.substr(pos + 1);
}

template <typename... Args>
std::string concat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return std::move(os).str();
}

}  // namespace details

/// Throws PanicError: "Runtime check failed at FILE:LINE: <args>" (or "... in FUNCTION" without
/// args).
template <typename... Args>
[[noreturn]] inline void panic(DebugInfo location, Args&&... args) {
  std::ostringstream os;
  os << "Runtime check failed at " << details::base_name(location.file_name()) << ':'
     << location.line();
  if constexpr (sizeof...(Args) == 0) {
    os << " in " << location.function_name();
  } else {
    os << ": ";
    (os << ... << std::forward<Args>(args));
  }
  throw PanicError(std::move(os).str());
}

/// `RuntimeCheck(cond, args...)`: panics with the streamed `args` when `cond` is false.
/// A struct (not a function) so the call site can be a defaulted parameter after the pack.
template <typename... Args>
struct RuntimeCheck {
  template <typename Cond>
  explicit RuntimeCheck(Cond&& condition, Args&&... args, DebugInfo location = {}) {
    if (!static_cast<bool>(condition)) [[unlikely]] {
      panic(location, std::forward<Args>(args)...);
    }
  }
};

template <typename Cond, typename... Args>
RuntimeCheck(Cond&&, Args&&...) -> RuntimeCheck<Args...>;

/// `Panic(args...)`: always throws PanicError with the streamed `args`.
template <typename... Args>
struct Panic {
  [[noreturn]] explicit Panic(Args&&... args, DebugInfo location = {}) {
    panic(location, std::forward<Args>(args)...);
  }
};

template <typename... Args>
Panic(Args&&...) -> Panic<Args...>;

/// Ceiling division for non-negative integers.
template <std::integral T, std::integral U>
constexpr auto div_ceil(T a, U b) {
  return (a + b - 1) / b;
}

/// The smallest power of two >= x (1 for x == 0).
constexpr std::uint32_t next_pow2(std::uint32_t x) {
  std::uint32_t p = 1;
  while (p < x) p <<= 1;
  return p;
}

/// Bytes per element of a DLPack dtype (lanes included).
constexpr std::size_t dtype_bytes(DLDataType dtype) {
  return static_cast<std::size_t>(dtype.bits) * dtype.lanes / 8;
}

namespace stdr = std::ranges;
namespace stdv = std::views;

/// [0, end), like torch's c10::irange.
template <std::integral T>
constexpr auto irange(T end) {
  return stdv::iota(T{0}, end);
}

/// [start, end).
template <std::integral T>
constexpr auto irange(T start, T end) {
  return stdv::iota(start, end);
}

namespace pointer {

/// `ptr` advanced by the sum of `offsets`, counted in units of T (bytes by default).
template <typename T = char, std::integral... Offsets>
inline void* offset(void* ptr, Offsets... offsets) {
  return static_cast<T*>(ptr) + (std::ptrdiff_t{0} + ... + static_cast<std::ptrdiff_t>(offsets));
}

template <typename T = char, std::integral... Offsets>
inline const void* offset(const void* ptr, Offsets... offsets) {
  return static_cast<const T*>(ptr) +
         (std::ptrdiff_t{0} + ... + static_cast<std::ptrdiff_t>(offsets));
}

}  // namespace pointer

}  // namespace host
