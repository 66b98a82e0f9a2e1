// add_constant: dst = src + kConstant for int32 (wrapping like torch), constant baked in.
#include <sgl_kernel/impl/elementwise.cuh>  // For elementwise::map
#include <sgl_kernel/utils.cuh>             // For SGL_DEVICE

#include <tvm/ffi/container/tensor.h>

#include <cstdint>

namespace {

template <int32_t kConstant>
struct AddConstantOp {
  // Unsigned arithmetic wraps on overflow (signed overflow would be undefined), as torch does.
  SGL_DEVICE int32_t operator()(int32_t x) const {
    return static_cast<int32_t>(static_cast<uint32_t>(x) + static_cast<uint32_t>(kConstant));
  }
};

/// dst = src + kConstant. dst and src: same shape (any rank), int32, same CUDA device; dst
/// contiguous. Returns false (and does nothing) when src is not contiguous: the wrapper retries
/// with a contiguous copy. Empty tensors launch nothing. kUsePDL: Programmatic Dependent Launch.
template <int32_t kConstant, bool kUsePDL>
bool add_constant(tvm::ffi::TensorView dst, tvm::ffi::TensorView src) {
  return host::elementwise::map<kUsePDL, int32_t>(
      AddConstantOp<kConstant>{}, {dst, "out"}, {{src, "src"}});
}

}  // namespace
