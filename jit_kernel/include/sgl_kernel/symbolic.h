// The Symbolic types TensorMatcher binds: SymbolicSize (a named size or stride), SymbolicDType and
// SymbolicDevice; each takes its value from the first tensor that uses it, later ones must agree.
#pragma once

#include <sgl_kernel/dtype.h>  // For dtype_of, dtype_name, details::DTypeEntry, details::same_dtype
#include <sgl_kernel/tensor_view.h>  // For device_name, device_type_name, details::join
#include <sgl_kernel/utils.h>        // For DebugInfo, panic

#include <dlpack/dlpack.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace host {

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
  SizeRef() = default;  // any size
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

/// The entries of a shape or stride pattern, held in place up to kInline of them (a matcher is
/// built on every kernel call: no allocation for the ranks kernels use), on the heap beyond.
class SizeRefs {
 public:
  static constexpr std::size_t kInline = 8;

  SizeRefs() = default;
  template <typename It>
  SizeRefs(It first, It last) {
    for (; first != last; ++first) push_back(SizeRef(*first));
  }
  SizeRefs(std::initializer_list<SizeRef> refs) : SizeRefs(refs.begin(), refs.end()) {}

  std::size_t size() const { return m_size; }
  const SizeRef& operator[](std::size_t index) const { return data()[index]; }
  const SizeRef* begin() const { return data(); }
  const SizeRef* end() const { return data() + m_size; }

 private:
  void push_back(SizeRef ref) {
    if (m_size < kInline) {
      m_inline[m_size] = ref;
    } else {
      if (m_heap.empty()) m_heap.assign(m_inline.begin(), m_inline.end());
      m_heap.push_back(ref);
    }
    ++m_size;
  }
  const SizeRef* data() const { return m_size <= kInline ? m_inline.data() : m_heap.data(); }

  std::array<SizeRef, kInline> m_inline{};
  std::vector<SizeRef> m_heap;
  std::size_t m_size = 0;
};

}  // namespace details

}  // namespace host
