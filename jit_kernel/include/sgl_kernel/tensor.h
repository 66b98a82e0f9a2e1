// Tensor validation: TensorMatcher over the Symbolic types (sgl_kernel/symbolic.h). Host-only;
// including it also brings dtype_of/dtype_name (dtype.h) and data_address/describe (tensor_view.h).
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

#include <sgl_kernel/dtype.h>     // For dtype_of, dtype_name, is_type, details::same_dtype
#include <sgl_kernel/symbolic.h>  // For SymbolicSize/DType/Device, details::SizeRef(s)
#include <sgl_kernel/tensor_layout.h>  // For details::misalignment, details::internal_overlap
#include <sgl_kernel/tensor_view.h>  // For data_address, device_name, details::describe, details::join
#include <sgl_kernel/utils.h>        // For DebugInfo, PanicError, dtype_bytes

#include <dlpack/dlpack.h>
#include <tvm/ffi/container/tensor.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

namespace host {

namespace details {
/// The options of with_dtype<Ts...> and with_device<Codes...>, one static array per list.
template <typename... Ts>
inline constexpr std::array<DTypeEntry, sizeof...(Ts)> kDTypeEntries{DTypeEntry(dtype_of<Ts>)...};
template <DLDeviceType... Codes>
inline constexpr std::array<DLDeviceType, sizeof...(Codes)> kDeviceTypes{Codes...};
}  // namespace details

/// Checks tensors against one pattern of shape, strides, dtype and device. Use as a temporary
/// (never store it); chain `.verify(a, "a").verify(b, "b")` to check several tensors.
class TensorMatcher {
 public:
  using SizeRef = details::SizeRef;
  using SizeRefs = details::SizeRefs;

  explicit TensorMatcher(std::initializer_list<SizeRef> shape) : m_shape(shape) {}
  /// Every dimension fixed to `shape`, any rank: e.g. element-wise operands that must all have
  /// the shape of one of them (`TensorMatcher(src.shape())`).
  explicit TensorMatcher(tvm::ffi::ShapeView shape) : m_shape(shape.begin(), shape.end()) {}
  TensorMatcher(const TensorMatcher&) = delete;
  TensorMatcher& operator=(const TensorMatcher&) = delete;

  /// The rows form: rank >= 2; dim 0 (`rows`) has any stride (bound to `row_stride`, where the
  /// tensor has more than one row), dims 1.. are dense and hold `row_size` elements in all,
  /// whatever their shape. E.g. a KV cache [slots, heads, head_dim] and its rows [n, heads *
  /// head_dim] agree on `row_size`.
  static TensorMatcher rows(SizeRef rows, SizeRef row_size, SizeRef row_stride) {
    return TensorMatcher(RowsForm{}, rows, row_size, row_stride);
  }

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
    m_dtype_options = details::kDTypeEntries<Ts...>;
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
    m_device_options = details::kDeviceTypes<Codes...>;
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
  struct RowsForm {};
  TensorMatcher(RowsForm, SizeRef rows, SizeRef row_size, SizeRef row_stride)
      : m_shape{rows}, m_strides(SizeRefs{row_stride}), m_row_size(row_size) {}

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
    const std::string dims = details::join(m_shape, [](const SizeRef& ref) -> std::string {
      if (ref.symbol()) {
        const auto name = ref.symbol()->get_name();
        return name.empty() ? std::string("?") : std::string(name);
      }
      return ref.fixed() == details::kAnySize ? std::string("*") : std::to_string(ref.fixed());
    });
    return m_row_size ? dims.substr(0, dims.size() - 1) + ", ...]" : dims;
  }

  void check_rank(const tvm::ffi::TensorView& view,
                  std::string_view name,
                  const DebugInfo& location) const {
    if (m_row_size && view.ndim() < 2) {
      fail(view,
           name,
           location,
           "rank mismatch: expected at least 2 dims ",
           shape_pattern(),
           " but got ",
           view.ndim());
    }
    if (!m_row_size && static_cast<std::size_t>(view.ndim()) != m_shape.size()) {
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

  // "at dim 1", or "of dims 1.." for kRowDims (the rows form's row size): where an entry is.
  static constexpr std::int64_t kRowDims = -1;
  static std::string where(std::int64_t dim) {
    return dim == kRowDims ? std::string("of dims 1..") : "at dim " + std::to_string(dim);
  }

  // Checks one entry against its pattern; `kind` ("shape", "stride", "row size") and `dim`
  // (see where) say which.
  void check_entry(const SizeRef& ref,
                   std::int64_t actual,
                   std::int64_t dim,
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
           " mismatch ",
           where(dim),
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
           " mismatch ",
           where(dim),
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
      const auto dim = static_cast<std::int64_t>(i);
      check_entry(m_shape[i],
                  view.size(dim),
                  dim,
                  "shape",
                  view,
                  name,
                  location);
    }
    if (m_row_size) {
      std::int64_t elements = 1;
      for (std::int64_t dim = 1; dim < view.ndim(); ++dim) elements *= view.size(dim);
      check_entry(*m_row_size, elements, kRowDims, "row size", view, name, location);
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
      check_entry(ref, view.stride(dim), dim, "stride", view, name, location);
    }
    if (m_row_size) {  // the rows form: dims 1.. dense
      std::int64_t expected = 1;
      for (std::int64_t dim = view.ndim() - 1; dim >= 1; --dim) {
        if (view.size(dim) != 1 && view.stride(dim) != expected) {
          fail(view,
               name,
               location,
               "must have dense rows (dims 1.. contiguous) but dim ",
               dim,
               " has stride ",
               view.stride(dim),
               " where ",
               expected,
               " was expected");
        }
        expected *= view.size(dim);
      }
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
    const auto type_names = [](std::span<const DLDeviceType> types) {
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
      fail(view,
           name,
           location,
           "device mismatch: expected ",
           type_names(m_device->get_options()),
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
    if (auto problem = details::misalignment(view, m_alignment))
      fail(view, name, location, *problem);
  }

  void check_no_overlap(const tvm::ffi::TensorView& view,
                        std::string_view name,
                        const DebugInfo& location) const {
    if (auto problem = details::internal_overlap(view)) fail(view, name, location, *problem);
  }

  // Held in place (no allocation per call): a matcher is built on every kernel call.
  SizeRefs m_shape;
  std::optional<SizeRefs> m_strides;
  std::optional<SizeRef> m_row_size;  // the rows form: elements of dims 1..
  // Unspecified dtype/device still bind through these, so chained verifies must agree.
  mutable SymbolicDType m_own_dtype;
  mutable SymbolicDevice m_own_device;
  SymbolicDType* m_dtype = &m_own_dtype;
  SymbolicDevice* m_device = &m_own_device;
  std::span<const details::DTypeEntry> m_dtype_options;  // static arrays (kDTypeEntries)
  std::span<const DLDeviceType> m_device_options;        // ... (kDeviceTypes)
  bool m_dtype_given = false;
  bool m_device_given = false;
  mutable int m_verified = 0;
  std::size_t m_alignment = 0;  // 0: not checked
  bool m_no_overlap = false;
};

}  // namespace host
