// The launch floor of bench_jit_kernels: a kernel that does nothing, launched as ours launch.
#include <sgl_kernel/tensor.h>   // For TensorMatcher, SymbolicDevice
#include <sgl_kernel/utils.cuh>  // For LaunchKernel

#include <dlpack/dlpack.h>
#include <tvm/ffi/container/tensor.h>

namespace {

__global__ void empty_kernel() {}

/// One block of one warp that does nothing, on `anchor`'s device and torch's current stream there;
/// with programmatic dependent launch when kUsePDL (as our kernels launch on SM90+).
template <bool kUsePDL>
void launch_empty(tvm::ffi::TensorView anchor) {
  using namespace host;
  auto device = SymbolicDevice{};
  TensorMatcher(anchor.shape()).with_device<kDLCUDA>(device).verify(anchor, "anchor");
  LaunchKernel(1, 32, device.unwrap()).enable_pdl(kUsePDL)(empty_kernel);
}

}  // namespace
