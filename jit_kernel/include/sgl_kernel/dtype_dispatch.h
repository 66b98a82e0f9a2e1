// dispatch_dtype: run a function template for the C++ element type that matches a runtime dtype.
// One module then serves every supported dtype, so a Python wrapper reads no dtype per call.
// Needs no CUDA: usable from plain C++ translation units.
#pragma once

#include <sgl_kernel/tensor.h>  // For is_type, dtype_of, dtype_name
#include <sgl_kernel/utils.h>   // For DebugInfo, panic

#include <dlpack/dlpack.h>

#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>

namespace host {

namespace details {

/// "float16, bfloat16" for <fp16_t, bf16_t>.
template <typename... Ts>
std::string dtype_list() {
  std::string names;
  ((names += (names.empty() ? "" : ", ") + dtype_name(dtype_of<Ts>)), ...);
  return names;
}

}  // namespace details

/// Calls `body.template operator()<T>()` for the T among `Ts` whose DLPack dtype is `dtype` and
/// returns its result. Any other dtype panics, naming the operation and the tensor:
/// "rmsnorm: input has dtype float32; supported: float16, bfloat16".
///
///   dispatch_dtype<fp16_t, bf16_t>(input.dtype(), "rmsnorm", "input", [&]<typename T>() {
///     rmsnorm<T, kUsePDL>(out, input, weight, eps);
///   });
template <typename... Ts, typename Body>
auto dispatch_dtype(DLDataType dtype,
                    std::string_view op,
                    std::string_view tensor_name,
                    Body&& body,
                    DebugInfo location = {}) {
  static_assert(sizeof...(Ts) > 0, "dispatch_dtype: list at least one element type");
  using First = std::tuple_element_t<0, std::tuple<Ts...>>;
  using Result = decltype(body.template operator()<First>());
  const auto unsupported = [&] {
    panic(location,
          op,
          ": ",
          tensor_name,
          " has dtype ",
          dtype_name(dtype),
          "; supported: ",
          details::dtype_list<Ts...>());
  };
  if constexpr (std::is_void_v<Result>) {
    const bool found = ((is_type<Ts>(dtype) && (body.template operator()<Ts>(), true)) || ...);
    if (!found) unsupported();
  } else {
    std::optional<Result> result;
    ((is_type<Ts>(dtype) && (result.emplace(body.template operator()<Ts>()), true)) || ...);
    if (!result) unsupported();
    return *result;
  }
}

}  // namespace host
