// fused_add_rmsnorm, in place: residual = round(input + residual);
// input = round(rmsnorm(residual) * weight). fp16/bf16, fp32 math, rows of any stride; every row
// size (8..16384, multiple of 8) dispatched in C++. A row map (sgl_kernel/impl/row/map.cuh) of
// the RMS operation with a residual and a weight.
#include <sgl_kernel/dtype_dispatch.h>   // For dispatch_dtype
#include <sgl_kernel/impl/norm.cuh>      // For norm::RmsOp
#include <sgl_kernel/impl/row/map.cuh>   // For row::map_typed, row::Residual, row::Weight
#include <sgl_kernel/impl/row/plan.cuh>  // For row::RowConfig
#include <sgl_kernel/type.cuh>           // For fp16_t, bf16_t

#include <tvm/ffi/container/tensor.h>

namespace {

/// In place: residual = input + residual; input = rmsnorm(residual) * weight. Each row of both
/// tensors is read once; the rounded sum is written to residual and normalised (what a later
/// read of residual returns) into input.
///   input:    [N, D] fp16/bf16, strides (any, 1), CUDA, 16-byte aligned, rows must not overlap
///   residual: [N, D] strides (any, 1), same dtype/device, 16-byte aligned, rows must not
///             overlap; must not share memory with input
///   weight:   [D] contiguous, same dtype/device, 16-byte aligned
/// D: a multiple of 8 in [8, 16384]. N == 0 launches nothing.
template <typename T, bool kUsePDL, typename Config = host::row::RowConfig<>>
void fused_add_rmsnorm(tvm::ffi::TensorView input,
                       tvm::ffi::TensorView residual,
                       tvm::ffi::TensorView weight,
                       float eps) {
  host::row::map_typed<T, kUsePDL, Config>(device::norm::RmsOp{eps},
                                           {input, "input"},
                                           {input, "input"},
                                           host::row::Residual{residual},
                                           host::row::Weight{weight});
}

/// The module's export: fused_add_rmsnorm for input's dtype (fp16, bf16).
template <bool kUsePDL, typename Config = host::row::RowConfig<>>
void fused_add_rmsnorm_by_dtype(tvm::ffi::TensorView input,
                                tvm::ffi::TensorView residual,
                                tvm::ffi::TensorView weight,
                                float eps) {
  host::dispatch_dtype<fp16_t, bf16_t>(
      input.dtype(), "fused_add_rmsnorm", "input", [&]<typename T>() {
        fused_add_rmsnorm<T, kUsePDL, Config>(input, residual, weight, eps);
      });
}

}  // namespace
