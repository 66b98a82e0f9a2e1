// scale: dst = src * factor for fp16/bf16/fp32 (fp32 arithmetic, one rounding), runtime factor.
#include <sgl_kernel/dtype_dispatch.h>      // For dispatch_dtype
#include <sgl_kernel/tensor.h>              // For TensorMatcher, SymbolicDevice
#include <sgl_kernel/impl/elementwise.cuh>  // For elementwise::launch_unary_map
#include <sgl_kernel/type.cuh>              // For device::cast, fp16_t, bf16_t, fp32_t
#include <sgl_kernel/utils.cuh>             // For SGL_DEVICE

#include <dlpack/dlpack.h>
#include <tvm/ffi/container/tensor.h>

#include <cstddef>

namespace {

template <typename T>
struct ScaleOp {
  float factor;
  SGL_DEVICE T operator()(T x) const { return device::cast<T>(device::cast<fp32_t>(x) * factor); }
};

/// dst = src * factor. dst and src: contiguous, same shape (any rank), dtype T, same CUDA device.
/// Returns false (and does nothing) when src is not contiguous. Empty tensors launch nothing.
/// kUsePDL: launch with Programmatic Dependent Launch (SM90+).
template <typename T, bool kUsePDL>
bool scale(tvm::ffi::TensorView dst, tvm::ffi::TensorView src, float factor) {
  using namespace host;
  // A non-contiguous src is the wrapper's cue to retry with a contiguous copy (a return value
  // costs the hot path less than a Python-side is_contiguous() check).
  if (!src.is_contiguous()) return false;

  auto device = SymbolicDevice{};
  TensorMatcher(src.shape())  //
      .with_device<kDLCUDA>(device)
      .with_dtype<T>()
      .verify(src, "src")
      .verify(dst, "out");

  const auto n = static_cast<std::size_t>(src.numel());
  elementwise::launch_unary_map<kUsePDL>(static_cast<T*>(dst.data_ptr()),
                                         static_cast<const T*>(src.data_ptr()),
                                         n,
                                         ScaleOp<T>{factor},
                                         device.unwrap());
  return true;
}

/// The module's export: scale for src's dtype (fp16, bf16, fp32).
template <bool kUsePDL>
bool scale_by_dtype(tvm::ffi::TensorView dst, tvm::ffi::TensorView src, float factor) {
  return host::dispatch_dtype<fp16_t, bf16_t, fp32_t>(
      src.dtype(), "scale", "src", [&]<typename T>() {
        return scale<T, kUsePDL>(dst, src, factor);
      });
}

}  // namespace
