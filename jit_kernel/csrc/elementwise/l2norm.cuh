// l2norm: out[i, :] = input[i, :] / sqrt(sum(input[i, :]^2) + eps) for fp16/bf16, in fp32.
#include <sgl_kernel/impl/row/map.cuh>  // For row::map
#include <sgl_kernel/type.cuh>          // For fp16_t, bf16_t
#include <sgl_kernel/utils.cuh>         // For SGL_DEVICE

#include <tvm/ffi/container/tensor.h>

namespace {

struct L2NormOp {
  float eps;
  // The row's reduction: the sum of term(x) over its elements.
  SGL_DEVICE float term(float x) const { return x * x; }
  // The row's value from that sum (inv_size = 1 / row size, unused here).
  SGL_DEVICE float finish(float sum, float) const { return rsqrtf(sum + eps); }
  // One output element from its input element and the row's value.
  SGL_DEVICE float apply(float x, float inv_norm) const { return x * inv_norm; }
};

/// out = l2norm(input) row by row. input: [N, D] fp16/bf16, unit stride along D, any 16-byte
/// aligned row stride, CUDA; out: the same shape, dtype and device, rows not overlapping (may be
/// input). D: a multiple of 8 in [8, 16384]. kUsePDL: Programmatic Dependent Launch (SM90+).
template <bool kUsePDL>
void l2norm(tvm::ffi::TensorView out, tvm::ffi::TensorView input, float eps) {
  host::row::map<kUsePDL, fp16_t, bf16_t>(L2NormOp{eps}, {out, "out"}, {input, "input"});
}

}  // namespace
