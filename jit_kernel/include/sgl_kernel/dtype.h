// DLPack dtypes of C++ element types: dtype_of<T>, is_type<T>(dtype), dtype_name(dtype).
// Host-only; with nvcc it also knows the CUDA element types (fp16_t, bf16_t, fp8_*).
#pragma once

#include <sgl_kernel/utils.h>  // For dependent_false_v

#ifdef __CUDACC__
#include <sgl_kernel/utils.cuh>  // For fp16_t, bf16_t, fp8_e4m3_t, fp8_e5m2_t
#endif

#include <dlpack/dlpack.h>

#include <cstdint>
#include <string>
#include <type_traits>

namespace host {

namespace details {

/// A literal -1 in a shape or stride list matches any value.
inline constexpr std::int64_t kAnySize = -1;

template <typename T>
struct dtype_trait_impl {
  static constexpr DLDataType value = [] {
    if constexpr (std::is_same_v<T, bool>) {
      return DLDataType{kDLBool, 8, 1};
    } else if constexpr (std::is_integral_v<T>) {
      return DLDataType{static_cast<std::uint8_t>(std::is_signed_v<T> ? kDLInt : kDLUInt),
                        static_cast<std::uint8_t>(8 * sizeof(T)),
                        1};
    } else if constexpr (std::is_floating_point_v<T>) {
      return DLDataType{kDLFloat, static_cast<std::uint8_t>(8 * sizeof(T)), 1};
    } else {
      static_assert(dependent_false_v<T>, "no DLPack dtype is known for this C++ type");
      return DLDataType{};
    }
  }();
};

#ifdef __CUDACC__
template <>
struct dtype_trait_impl<fp16_t> {
  static constexpr DLDataType value{kDLFloat, 16, 1};
};
template <>
struct dtype_trait_impl<bf16_t> {
  static constexpr DLDataType value{kDLBfloat, 16, 1};
};
template <>
struct dtype_trait_impl<fp8_e4m3_t> {
  static constexpr DLDataType value{kDLFloat8_e4m3fn, 8, 1};
};
template <>
struct dtype_trait_impl<fp8_e5m2_t> {
  static constexpr DLDataType value{kDLFloat8_e5m2, 8, 1};
};
#endif

inline bool same_dtype(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

/// DLDataType in a named struct. nvcc 13.0's front end crashes ("find_allocated_name_reference")
/// when a standard container holds the typedef'd anonymous struct DLDataType directly.
struct DTypeEntry {
  std::uint8_t code;
  std::uint8_t bits;
  std::uint16_t lanes;
  constexpr DTypeEntry(DLDataType d) : code(d.code), bits(d.bits), lanes(d.lanes) {}  // NOLINT
  constexpr operator DLDataType() const { return DLDataType{code, bits, lanes}; }     // NOLINT
};

}  // namespace details

/// The DLPack dtype of a C++ element type (int32_t, float, fp16_t, bf16_t, ...).
template <typename T>
inline constexpr DLDataType dtype_of = details::dtype_trait_impl<T>::value;

/// True when `dtype` is the DLPack dtype of T.
template <typename T>
inline bool is_type(DLDataType dtype) {
  return details::same_dtype(dtype, dtype_of<T>);
}

/// "float16", "bfloat16", "int32", "float8_e4m3fn", ... (torch-like names).
inline std::string dtype_name(DLDataType dtype) {
  std::string base;
  switch (dtype.code) {
    case kDLInt:
      base = "int";
      break;
    case kDLUInt:
      base = "uint";
      break;
    case kDLFloat:
      base = "float";
      break;
    case kDLBfloat:
      base = "bfloat";
      break;
    case kDLBool:
      return dtype.lanes == 1 ? "bool" : "bool x" + std::to_string(dtype.lanes);
    case kDLFloat8_e4m3fn:
      return "float8_e4m3fn";
    case kDLFloat8_e5m2:
      return "float8_e5m2";
    default:
      base = "dtype(code=" + std::to_string(dtype.code) + ")";
  }
  base += std::to_string(dtype.bits);
  if (dtype.lanes != 1) base += "x" + std::to_string(dtype.lanes);
  return base;
}

namespace details {
inline std::string dtype_entry_name(const DTypeEntry& entry) {
  return dtype_name(entry);
}
}  // namespace details

}  // namespace host
