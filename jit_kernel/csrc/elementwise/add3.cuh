// add3: out = a + b + c for fp16/bf16/fp32, summed in fp32 and rounded once.
#include <sgl_kernel/impl/elementwise.cuh>  // For elementwise::map
#include <sgl_kernel/type.cuh>              // For device::cast, fp16_t, bf16_t, fp32_t
#include <sgl_kernel/utils.cuh>             // For SGL_DEVICE

#include <tvm/ffi/container/tensor.h>

namespace {

struct Add3Op {
  template <typename T>
  SGL_DEVICE T operator()(T a, T b, T c) const {
    using device::cast;
    return cast<T>(cast<fp32_t>(a) + cast<fp32_t>(b) + cast<fp32_t>(c));
  }
};

/// out = a + b + c. All four: same shape (any rank), fp16/bf16/fp32, same CUDA device; out
/// contiguous. Returns false (and does nothing) when an input is not contiguous: the wrapper
/// retries with contiguous copies. kUsePDL: Programmatic Dependent Launch (SM90+).
template <bool kUsePDL>
bool add3(tvm::ffi::TensorView out,
          tvm::ffi::TensorView a,
          tvm::ffi::TensorView b,
          tvm::ffi::TensorView c) {
  return host::elementwise::map<kUsePDL, fp16_t, bf16_t, fp32_t>(
      Add3Op{}, {out, "out"}, {{a, "a"}, {b, "b"}, {c, "c"}});
}

}  // namespace
