// Tensor validation: TensorMatcher and the Symbolic types (SymbolicSize, SymbolicDType,
// SymbolicDevice). Host-only; with nvcc it also knows the CUDA element types (fp16_t, ...).
//
//   auto N = SymbolicSize{"num_elements"};
//   auto device = SymbolicDevice{};
//   TensorMatcher({N})  //
//       .with_dtype<fp16_t>()
//       .with_device<kDLCUDA>(device)
//       .verify(dst, "dst")
//       .verify(src, "src");
//
// A failed check throws host::PanicError naming the function, the tensor, what was expected and
// what was found, e.g.
//   scale: tensor 'src' shape mismatch at dim 0 ('num_elements'): expected 1024 (bound by 'dst')
//   but got 1000; tensor: shape=[1000], strides=[1], dtype=float16, device=cuda:0 (checked at
//   scale.cuh:97)
#pragma once

#include <sgl_kernel/utils.h>  // For DebugInfo, PanicError, details::concat, dtype_bytes

#ifdef __CUDACC__
#include <sgl_kernel/utils.cuh>  // For fp16_t, bf16_t, fp8_e4m3_t, fp8_e5m2_t
#endif

#include <dlpack/dlpack.h>
#include <tvm/ffi/container/tensor.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <ostream>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

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

/// "cpu", "cuda", "cuda_host", "rocm", ... for a DLPack device type.
inline std::string device_type_name(DLDeviceType type) {
  switch (type) {
    case kDLCPU:
      return "cpu";
    case kDLCUDA:
      return "cuda";
    case kDLCUDAHost:
      return "cuda_host";
    case kDLOpenCL:
      return "opencl";
    case kDLVulkan:
      return "vulkan";
    case kDLMetal:
      return "metal";
    case kDLVPI:
      return "vpi";
    case kDLROCM:
      return "rocm";
    case kDLROCMHost:
      return "rocm_host";
    case kDLExtDev:
      return "ext_dev";
    case kDLCUDAManaged:
      return "cuda_managed";
    case kDLOneAPI:
      return "oneapi";
    case kDLWebGPU:
      return "webgpu";
    case kDLHexagon:
      return "hexagon";
    default:
      return "device_type(" + std::to_string(static_cast<int>(type)) + ")";
  }
}

/// "cuda:0", "cpu:0".
inline std::string device_name(DLDevice device) {
  return device_type_name(device.device_type) + ":" + std::to_string(device.device_id);
}

/// The address of element 0 of `view`: its data pointer plus the DLPack byte offset (torch
/// exports views with the storage offset already in the data pointer and a byte offset of 0,
/// but DLPack allows either). Kernels that index a tensor should start from this address.
inline void* data_address(const tvm::ffi::TensorView& view) {
  return static_cast<char*>(view.data_ptr()) + view.byte_offset();
}

namespace details {

template <typename Range, typename F>
std::string join(const Range& items, F&& fmt) {
  std::string out = "[";
  bool first = true;
  for (const auto& item : items) {
    if (!first) out += ", ";
    out += fmt(item);
    first = false;
  }
  return out + "]";
}

inline std::string format_ints(tvm::ffi::ShapeView values) {
  return join(values, [](std::int64_t v) { return std::to_string(v); });
}

/// "shape=[1000], strides=[1], dtype=float16, device=cuda:0".
inline std::string describe(const tvm::ffi::TensorView& view) {
  return "shape=" + format_ints(view.shape()) + ", strides=" + format_ints(view.strides()) +
         ", dtype=" + dtype_name(view.dtype()) + ", device=" + device_name(view.device());
}

}  // namespace details

/// A named dimension (or stride) whose value is bound by the first tensor that uses it; later
/// tensors must agree. Non-copyable: TensorMatcher keeps a reference.
class SymbolicSize {
 public:
  explicit SymbolicSize(std::string_view name = {}) : m_name(name) {}
  SymbolicSize(const SymbolicSize&) = delete;
  SymbolicSize& operator=(const SymbolicSize&) = delete;

  std::string_view get_name() const { return m_name; }
  bool has_value() const { return m_value.has_value(); }
  std::optional<std::int64_t> get_value() const { return m_value; }
  /// Who bound the value: a tensor name, or "set_value".
  std::string_view bound_by() const { return m_bound_by; }

  /// Pins the value before verification. Panics if already bound.
  void set_value(std::int64_t value, DebugInfo location = {}) {
    if (m_value) panic(location, "size '", m_name, "' is already bound to ", *m_value);
    m_value = value;
    m_bound_by = "set_value";
  }

  /// Binds `value` (recording `source`) if unbound; returns false on a mismatch.
  bool bind_or_match(std::int64_t value, std::string_view source) {
    if (!m_value) {
      m_value = value;
      m_bound_by = source;
      return true;
    }
    return *m_value == value;
  }

  /// The bound value. Panics if nothing bound it.
  std::int64_t unwrap(DebugInfo location = {}) const {
    if (!m_value) panic(location, "size '", m_name, "' has no value: no tensor bound it");
    return *m_value;
  }

 private:
  std::string m_name;
  std::string m_bound_by;
  std::optional<std::int64_t> m_value;
};

/// A dtype bound by the first tensor; `set_options` restricts the allowed dtypes.
class SymbolicDType {
 public:
  SymbolicDType() = default;
  SymbolicDType(const SymbolicDType&) = delete;
  SymbolicDType& operator=(const SymbolicDType&) = delete;

  template <typename... Ts>
  void set_options() {
    m_options = {dtype_of<Ts>...};
  }
  void set_options(std::span<const DLDataType> options) {
    m_options.clear();
    for (const DLDataType& option : options) m_options.emplace_back(option);
  }
  std::span<const details::DTypeEntry> get_options() const { return m_options; }

  /// Pins the dtype. Panics if already bound or not among the options.
  void set_value(DLDataType dtype, DebugInfo location = {}) {
    if (m_bound) panic(location, "dtype is already bound to ", dtype_name(m_value));
    if (!allows(dtype)) {
      panic(location,
            "dtype ",
            dtype_name(dtype),
            " is not among the allowed options ",
            details::join(m_options, details::dtype_entry_name));
    }
    m_value = dtype;
    m_bound = true;
    m_bound_by = "set_value";
  }

  bool allows(DLDataType dtype) const {
    if (m_options.empty()) return true;
    for (const auto& option : m_options) {
      if (details::same_dtype(option, dtype)) return true;
    }
    return false;
  }

  bool has_value() const { return m_bound; }
  std::optional<DLDataType> get_value() const {
    return m_bound ? std::optional<DLDataType>(m_value) : std::nullopt;
  }
  std::string_view bound_by() const { return m_bound_by; }

  bool bind_or_match(DLDataType dtype, std::string_view source) {
    if (!m_bound) {
      m_bound = true;
      m_value = dtype;
      m_bound_by = source;
      return true;
    }
    return details::same_dtype(m_value, dtype);
  }

  DLDataType unwrap(DebugInfo location = {}) const {
    if (!m_bound) panic(location, "dtype has no value: no tensor bound it");
    return m_value;
  }

  /// True when the bound dtype is T.
  template <typename T>
  bool is_type() const {
    return m_bound && host::is_type<T>(m_value);
  }

 private:
  std::vector<details::DTypeEntry> m_options;
  // (bool + value rather than std::optional: nvcc 13.0 EDG crashes on optional<DLDataType> here)
  bool m_bound = false;
  DLDataType m_value{};
  std::string m_bound_by;
};

/// A device bound by the first tensor (type and id); `set_options` restricts the device types.
class SymbolicDevice {
 public:
  SymbolicDevice() = default;
  SymbolicDevice(const SymbolicDevice&) = delete;
  SymbolicDevice& operator=(const SymbolicDevice&) = delete;

  template <DLDeviceType... Codes>
  void set_options() {
    m_options = {Codes...};
  }
  void set_options(std::span<const DLDeviceType> options) {
    m_options.assign(options.begin(), options.end());
  }
  std::span<const DLDeviceType> get_options() const { return m_options; }

  void set_value(DLDevice device, DebugInfo location = {}) {
    if (m_bound) panic(location, "device is already bound to ", device_name(m_value));
    if (!allows(device.device_type)) {
      panic(location,
            "device ",
            device_name(device),
            " is not among the allowed types ",
            details::join(m_options, device_type_name));
    }
    m_value = device;
    m_bound = true;
    m_bound_by = "set_value";
  }

  bool allows(DLDeviceType type) const {
    if (m_options.empty()) return true;
    for (const auto option : m_options) {
      if (option == type) return true;
    }
    return false;
  }

  bool has_value() const { return m_bound; }
  std::optional<DLDevice> get_value() const {
    return m_bound ? std::optional<DLDevice>(m_value) : std::nullopt;
  }
  std::string_view bound_by() const { return m_bound_by; }

  bool bind_or_match(DLDevice device, std::string_view source) {
    if (!m_bound) {
      m_bound = true;
      m_value = device;
      m_bound_by = source;
      return true;
    }
    return m_value.device_type == device.device_type && m_value.device_id == device.device_id;
  }

  DLDevice unwrap(DebugInfo location = {}) const {
    if (!m_bound) panic(location, "device has no value: no tensor bound it");
    return m_value;
  }

 private:
  std::vector<DLDeviceType> m_options;
  // (bool + value rather than std::optional: nvcc 13.0 EDG crashes on optional<DLDevice> here)
  bool m_bound = false;
  DLDevice m_value{};
  std::string m_bound_by;
};

namespace details {

/// One entry of a shape or stride pattern: a SymbolicSize, a fixed value, or -1 (any).
class SizeRef {
 public:
  SizeRef(SymbolicSize& symbol) : m_symbol(&symbol) {}  // NOLINT(google-explicit-constructor)
  template <typename T>
    requires std::is_integral_v<T>
  SizeRef(T value) : m_fixed(static_cast<std::int64_t>(value)) {}  // NOLINT

  SymbolicSize* symbol() const { return m_symbol; }
  std::int64_t fixed() const { return m_fixed; }

 private:
  SymbolicSize* m_symbol = nullptr;
  std::int64_t m_fixed = kAnySize;
};

}  // namespace details

/// Checks tensors against one pattern of shape, strides, dtype and device. Use as a temporary
/// (never store it); chain `.verify(a, "a").verify(b, "b")` to check several tensors.
class TensorMatcher {
 public:
  using SizeRef = details::SizeRef;

  explicit TensorMatcher(std::initializer_list<SizeRef> shape) : m_shape(shape) {}
  /// Every dimension fixed to `shape`, any rank: e.g. element-wise operands that must all have
  /// the shape of one of them (`TensorMatcher(src.shape())`).
  explicit TensorMatcher(tvm::ffi::ShapeView shape) : m_shape(shape.begin(), shape.end()) {}
  TensorMatcher(const TensorMatcher&) = delete;
  TensorMatcher& operator=(const TensorMatcher&) = delete;

  /// Expected strides (same count as the shape). Without it, tensors must be contiguous.
  TensorMatcher&& with_strides(std::initializer_list<SizeRef> strides, DebugInfo location = {}) && {
    if (m_strides) panic(location, "TensorMatcher: with_strides given twice");
    if (strides.size() != m_shape.size()) {
      panic(location,
            "TensorMatcher: with_strides has ",
            strides.size(),
            " entries but the shape has ",
            m_shape.size());
    }
    m_strides.emplace(strides);
    return std::move(*this);
  }

  /// Allowed element types; all verified tensors share one dtype.
  template <typename... Ts>
  TensorMatcher&& with_dtype(DebugInfo location = {}) && {
    static_assert(sizeof...(Ts) > 0, "with_dtype needs at least one type");
    return std::move(*this).template with_dtype<Ts...>(m_own_dtype, location);
  }

  /// Allowed element types (may be empty = any), bound to an external symbol.
  template <typename... Ts>
  TensorMatcher&& with_dtype(SymbolicDType& dtype, DebugInfo location = {}) && {
    if (m_dtype_given) panic(location, "TensorMatcher: with_dtype given twice");
    m_dtype_given = true;
    m_dtype = &dtype;
    m_dtype_options = {dtype_of<Ts>...};
    return std::move(*this);
  }

  /// Allowed device types; all verified tensors share one device (type and id).
  template <DLDeviceType... Codes>
  TensorMatcher&& with_device(DebugInfo location = {}) && {
    static_assert(sizeof...(Codes) > 0, "with_device needs at least one device type");
    return std::move(*this).template with_device<Codes...>(m_own_device, location);
  }

  template <DLDeviceType... Codes>
  TensorMatcher&& with_device(SymbolicDevice& device, DebugInfo location = {}) && {
    if (m_device_given) panic(location, "TensorMatcher: with_device given twice");
    m_device_given = true;
    m_device = &device;
    m_device_options = {Codes...};
    return std::move(*this);
  }

  /// Also require every access of `bytes` bytes along the last dimension to be aligned, as a
  /// vectorised kernel needs: the data address (see data_address) and the stride in bytes of
  /// every other dimension of size > 1 must be multiples of `bytes` (a power of two). Empty
  /// tensors pass. The last dimension's size is not checked (kernels check it with a message of
  /// their own); pair this with `with_strides({..., 1})` or contiguity.
  TensorMatcher&& with_alignment(std::size_t bytes, DebugInfo location = {}) && {
    if (bytes == 0 || (bytes & (bytes - 1)) != 0) {
      panic(location, "TensorMatcher: with_alignment(", bytes, ") is not a power of two");
    }
    m_alignment = bytes;
    return std::move(*this);
  }

  /// Also require that no two elements share memory (a stride of 0, or rows that overlap): for
  /// tensors a kernel writes. Sufficient test: with the dimensions of size > 1 sorted by stride,
  /// each stride exceeds the farthest offset the smaller-stride dimensions reach.
  TensorMatcher&& without_internal_overlap() && {
    m_no_overlap = true;
    return std::move(*this);
  }

  /// Checks `view`, named "tensor #k" (k counts the verify calls from 1).
  const TensorMatcher&& verify(const tvm::ffi::TensorView& view, DebugInfo location = {}) const&& {
    const std::string name = "tensor #" + std::to_string(m_verified + 1);
    return std::move(*this).verify(view, name, location);
  }

  /// Checks `view`; `name` appears in every error message.
  const TensorMatcher&& verify(const tvm::ffi::TensorView& view,
                               std::string_view name,
                               DebugInfo location = {}) const&& {
    ++m_verified;
    check_rank(view, name, location);
    check_shape(view, name, location);
    check_strides(view, name, location);
    check_dtype(view, name, location);
    check_device(view, name, location);
    if (m_alignment != 0) check_alignment(view, name, location);
    if (m_no_overlap) check_no_overlap(view, name, location);
    return std::move(*this);
  }

 private:
  template <typename... Args>
  [[noreturn]] static void fail(const tvm::ffi::TensorView& view,
                                std::string_view name,
                                const DebugInfo& location,
                                Args&&... what) {
    std::ostringstream os;
    const auto function = details::short_function_name(location.function_name());
    if (!function.empty()) os << function << ": ";
    os << "tensor '" << name << "' ";
    (os << ... << std::forward<Args>(what));
    os << "; tensor: " << details::describe(view);
    if (location.line() != 0) {
      os << " (checked at " << details::base_name(location.file_name()) << ':' << location.line()
         << ')';
    }
    throw PanicError(std::move(os).str());
  }

  std::string shape_pattern() const {
    return details::join(m_shape, [](const SizeRef& ref) -> std::string {
      if (ref.symbol()) {
        const auto name = ref.symbol()->get_name();
        return name.empty() ? std::string("?") : std::string(name);
      }
      return ref.fixed() == details::kAnySize ? std::string("*") : std::to_string(ref.fixed());
    });
  }

  void check_rank(const tvm::ffi::TensorView& view,
                  std::string_view name,
                  const DebugInfo& location) const {
    if (static_cast<std::size_t>(view.ndim()) != m_shape.size()) {
      fail(view,
           name,
           location,
           "rank mismatch: expected ",
           m_shape.size(),
           " dims ",
           shape_pattern(),
           " but got ",
           view.ndim());
    }
  }

  // Checks one entry (size or stride) against its pattern; `kind` is "shape" or "stride".
  void check_entry(const SizeRef& ref,
                   std::int64_t actual,
                   int dim,
                   const char* kind,
                   const tvm::ffi::TensorView& view,
                   std::string_view name,
                   const DebugInfo& location) const {
    if (SymbolicSize* symbol = ref.symbol()) {
      if (symbol->bind_or_match(actual, name)) return;
      fail(view,
           name,
           location,
           kind,
           " mismatch at dim ",
           dim,
           " ('",
           symbol->get_name(),
           "'): expected ",
           *symbol->get_value(),
           " (bound by '",
           symbol->bound_by(),
           "') but got ",
           actual);
    }
    if (ref.fixed() != details::kAnySize && ref.fixed() != actual) {
      fail(view,
           name,
           location,
           kind,
           " mismatch at dim ",
           dim,
           ": expected ",
           ref.fixed(),
           " but got ",
           actual);
    }
  }

  void check_shape(const tvm::ffi::TensorView& view,
                   std::string_view name,
                   const DebugInfo& location) const {
    for (std::size_t i = 0; i < m_shape.size(); ++i) {
      check_entry(m_shape[i],
                  view.size(static_cast<std::int64_t>(i)),
                  static_cast<int>(i),
                  "shape",
                  view,
                  name,
                  location);
    }
  }

  void check_strides(const tvm::ffi::TensorView& view,
                     std::string_view name,
                     const DebugInfo& location) const {
    if (!m_strides) {
      if (!view.is_contiguous()) {
        fail(view,
             name,
             location,
             "must be contiguous but has strides ",
             details::format_ints(view.strides()));
      }
      return;
    }
    for (std::size_t i = 0; i < m_strides->size(); ++i) {
      const auto dim = static_cast<std::int64_t>(i);
      const SizeRef& ref = (*m_strides)[i];
      // The stride of a dimension of size <= 1 is meaningless (torch normalises it freely):
      // it may bind a still-unbound symbol but never causes a mismatch.
      if (view.size(dim) <= 1) {
        if (ref.symbol() && !ref.symbol()->has_value()) {
          ref.symbol()->bind_or_match(view.stride(dim), name);
        }
        continue;
      }
      check_entry(ref, view.stride(dim), static_cast<int>(i), "stride", view, name, location);
    }
  }

  void check_dtype(const tvm::ffi::TensorView& view,
                   std::string_view name,
                   const DebugInfo& location) const {
    const DLDataType actual = view.dtype();
    if (!m_dtype_options.empty()) {
      bool allowed = false;
      for (const auto& option : m_dtype_options) allowed |= details::same_dtype(option, actual);
      if (!allowed) {
        if (m_dtype_options.size() == 1) {
          fail(view,
               name,
               location,
               "dtype mismatch: expected ",
               dtype_name(DLDataType(m_dtype_options[0])),
               " but got ",
               dtype_name(actual));
        }
        fail(view,
             name,
             location,
             "dtype mismatch: expected one of ",
             details::join(m_dtype_options, details::dtype_entry_name),
             " but got ",
             dtype_name(actual));
      }
    }
    if (!m_dtype->allows(actual)) {
      fail(view,
           name,
           location,
           "dtype mismatch: expected one of ",
           details::join(m_dtype->get_options(), details::dtype_entry_name),
           " but got ",
           dtype_name(actual));
    }
    if (!m_dtype->bind_or_match(actual, name)) {
      fail(view,
           name,
           location,
           "dtype mismatch: expected ",
           dtype_name(m_dtype->unwrap()),
           " (bound by '",
           m_dtype->bound_by(),
           "') but got ",
           dtype_name(actual));
    }
  }

  void check_device(const tvm::ffi::TensorView& view,
                    std::string_view name,
                    const DebugInfo& location) const {
    const DLDevice actual = view.device();
    const auto type_names = [](const std::vector<DLDeviceType>& types) {
      return types.size() == 1 ? device_type_name(types[0])
                               : "one of " + details::join(types, device_type_name);
    };
    if (!m_device_options.empty()) {
      bool allowed = false;
      for (const auto option : m_device_options) allowed |= option == actual.device_type;
      if (!allowed) {
        fail(view,
             name,
             location,
             "device mismatch: expected ",
             type_names(m_device_options),
             " but got ",
             device_name(actual));
      }
    }
    if (!m_device->allows(actual.device_type)) {
      const std::vector<DLDeviceType> options(m_device->get_options().begin(),
                                              m_device->get_options().end());
      fail(view,
           name,
           location,
           "device mismatch: expected ",
           type_names(options),
           " but got ",
           device_name(actual));
    }
    if (!m_device->bind_or_match(actual, name)) {
      fail(view,
           name,
           location,
           "device mismatch: expected ",
           device_name(m_device->unwrap()),
           " (bound by '",
           m_device->bound_by(),
           "') but got ",
           device_name(actual));
    }
  }

  void check_alignment(const tvm::ffi::TensorView& view,
                       std::string_view name,
                       const DebugInfo& location) const {
    if (view.numel() == 0) return;
    const auto address = reinterpret_cast<std::uintptr_t>(data_address(view));
    if (const auto misalignment = address % m_alignment; misalignment != 0) {
      fail(view,
           name,
           location,
           "is not ",
           m_alignment,
           "-byte aligned: its data address is ",
           misalignment,
           " bytes past a ",
           m_alignment,
           "-byte boundary (a view with a storage offset?)");
    }
    const auto elem_bytes = static_cast<std::int64_t>(dtype_bytes(view.dtype()));
    const auto alignment = static_cast<std::int64_t>(m_alignment);
    for (std::int64_t dim = 0; dim + 1 < view.ndim(); ++dim) {
      if (view.size(dim) <= 1) continue;
      const std::int64_t stride_bytes = view.stride(dim) * elem_bytes;
      if (stride_bytes % alignment != 0) {
        fail(view,
             name,
             location,
             "is not ",
             m_alignment,
             "-byte aligned: the stride of dim ",
             dim,
             " is ",
             view.stride(dim),
             " elements (",
             stride_bytes,
             " bytes), not a multiple of ",
             m_alignment,
             " bytes");
      }
    }
  }

  void check_no_overlap(const tvm::ffi::TensorView& view,
                        std::string_view name,
                        const DebugInfo& location) const {
    if (view.numel() == 0) return;
    // (|stride|, size, dim) of every dimension of size > 1, by increasing stride.
    std::vector<std::array<std::int64_t, 3>> dims;
    for (std::int64_t dim = 0; dim < view.ndim(); ++dim) {
      const std::int64_t size = view.size(dim);
      if (size <= 1) continue;
      const std::int64_t stride = view.stride(dim);
      dims.push_back({stride < 0 ? -stride : stride, size, dim});
    }
    std::sort(dims.begin(), dims.end());
    std::int64_t reach = 0;  // the farthest offset reached by the dimensions checked so far
    for (const auto& [stride, size, dim] : dims) {
      if (stride <= reach) {
        fail(view,
             name,
             location,
             "has internal overlap (dim ",
             dim,
             " of size ",
             size,
             " has stride ",
             view.stride(dim),
             ", which revisits elements): a tensor the kernel writes must not alias itself");
      }
      reach += stride * (size - 1);
    }
  }

  std::vector<SizeRef> m_shape;
  std::optional<std::vector<SizeRef>> m_strides;
  // Unspecified dtype/device still bind through these, so chained verifies must agree.
  mutable SymbolicDType m_own_dtype;
  mutable SymbolicDevice m_own_device;
  SymbolicDType* m_dtype = &m_own_dtype;
  SymbolicDevice* m_device = &m_own_device;
  std::vector<details::DTypeEntry> m_dtype_options;
  std::vector<DLDeviceType> m_device_options;
  bool m_dtype_given = false;
  bool m_device_given = false;
  mutable int m_verified = 0;
  std::size_t m_alignment = 0;  // 0: not checked
  bool m_no_overlap = false;
};

}  // namespace host
