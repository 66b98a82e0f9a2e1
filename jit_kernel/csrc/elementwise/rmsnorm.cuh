// rmsnorm: out[i, :] = input[i, :] * rsqrt(mean(input[i, :]^2) + eps) * weight, fp16/bf16, fp32
// math. Rows of any stride; every row size (8..16384, multiple of 8) dispatched in C++. A row map
// (sgl_kernel/impl/row/map.cuh) of the RMS operation with a weight.
#include <sgl_kernel/dtype_dispatch.h>   // For dispatch_dtype
#include <sgl_kernel/impl/norm.cuh>      // For norm::RmsOp
#include <sgl_kernel/impl/row/map.cuh>   // For row::map_typed, row::Weight
#include <sgl_kernel/impl/row/plan.cuh>  // For row::RowConfig
#include <sgl_kernel/type.cuh>           // For fp16_t, bf16_t

#include <tvm/ffi/container/tensor.h>

namespace {

/// out = rmsnorm(input) * weight.
///   input:  [N, D] fp16/bf16, strides (any, 1), 16-byte aligned rows, CUDA
///   weight: [D] contiguous, same dtype/device, 16-byte aligned
///   out:    [N, D] strides (any, 1), same dtype/device, 16-byte aligned, rows must not overlap;
///           out may be input itself (in place)
/// D: a multiple of 8 in [8, 16384]. N == 0 launches nothing.
template <typename T, bool kUsePDL, typename Config = host::row::RowConfig<>>
void rmsnorm(tvm::ffi::TensorView out,
             tvm::ffi::TensorView input,
             tvm::ffi::TensorView weight,
             float eps) {
  host::row::map_typed<T, kUsePDL, Config>(
      device::norm::RmsOp{eps}, {out, "out"}, {input, "input"}, host::row::Weight{weight});
}

/// The module's export: rmsnorm for input's dtype (fp16, bf16).
template <bool kUsePDL, typename Config = host::row::RowConfig<>>
void rmsnorm_by_dtype(tvm::ffi::TensorView out,
                      tvm::ffi::TensorView input,
                      tvm::ffi::TensorView weight,
                      float eps) {
  host::dispatch_dtype<fp16_t, bf16_t>(input.dtype(), "rmsnorm", "input", [&]<typename T>() {
    rmsnorm<T, kUsePDL, Config>(out, input, weight, eps);
  });
}

}  // namespace
