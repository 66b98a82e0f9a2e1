// add_constant: dst = src + kConstant for int32 (wrapping like torch), constant baked in.
#include <sgl_kernel/tensor.h>              // For TensorMatcher, SymbolicDevice
#include <sgl_kernel/impl/elementwise.cuh>  // For elementwise::launch_unary_map
#include <sgl_kernel/utils.cuh>             // For SGL_DEVICE

#include <dlpack/dlpack.h>
#include <tvm/ffi/container/tensor.h>

#include <cstddef>
#include <cstdint>

namespace {

template <int32_t kConstant>
struct AddConstantOp {
  // Unsigned arithmetic wraps on overflow (signed overflow would be undefined), as torch does.
  SGL_DEVICE int32_t operator()(int32_t x) const {
    return static_cast<int32_t>(static_cast<uint32_t>(x) + static_cast<uint32_t>(kConstant));
  }
};

/// dst = src + kConstant. dst and src: contiguous, same shape (any rank), int32, same CUDA device.
/// Returns false (and does nothing) when src is not contiguous. Empty tensors launch nothing.
template <int32_t kConstant>
bool add_constant(tvm::ffi::TensorView dst, tvm::ffi::TensorView src) {
  using namespace host;
  // A non-contiguous src is the wrapper's cue to retry with a contiguous copy (a return value
  // costs the hot path less than a Python-side is_contiguous() check).
  if (!src.is_contiguous()) return false;

  auto device = SymbolicDevice{};
  TensorMatcher(src.shape())  //
      .with_device<kDLCUDA>(device)
      .with_dtype<int32_t>()
      .verify(src, "src")
      .verify(dst, "out");

  const auto n = static_cast<std::size_t>(src.numel());
  elementwise::launch_unary_map</*kUsePDL=*/false>(static_cast<int32_t*>(dst.data_ptr()),
                                                   static_cast<const int32_t*>(src.data_ptr()),
                                                   n,
                                                   AddConstantOp<kConstant>{},
                                                   device.unwrap());
  return true;
}

}  // namespace
