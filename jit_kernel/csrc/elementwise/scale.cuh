// scale: dst = src * factor for fp16/bf16/fp32 (fp32 arithmetic, one rounding), runtime factor.
#include <sgl_kernel/impl/elementwise.cuh>  // For elementwise::map
#include <sgl_kernel/type.cuh>              // For device::cast, fp16_t, bf16_t, fp32_t
#include <sgl_kernel/utils.cuh>             // For SGL_DEVICE

#include <tvm/ffi/container/tensor.h>

namespace {

struct ScaleOp {
  float factor;
  template <typename T>
  SGL_DEVICE T operator()(T x) const {
    return device::cast<T>(device::cast<fp32_t>(x) * factor);
  }
};

/// dst = src * factor. dst and src: same shape (any rank), fp16/bf16/fp32, same CUDA device; dst
/// contiguous. Returns false (and does nothing) when src is not contiguous: the wrapper retries
/// with a contiguous copy. Empty tensors launch nothing. kUsePDL: Programmatic Dependent Launch.
template <bool kUsePDL>
bool scale(tvm::ffi::TensorView dst, tvm::ffi::TensorView src, float factor) {
  return host::elementwise::map<kUsePDL, fp16_t, bf16_t, fp32_t>(
      ScaleOp{factor}, {dst, "out"}, {{src, "src"}});
}

}  // namespace
