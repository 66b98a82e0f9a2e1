// Test-only kernels that fault on purpose, for the runner's crash-resume verification
// (verification/verify_crash_resume.py): never call them from real code.
#include <sgl_kernel/tensor.h>   // For TensorMatcher, SymbolicDevice
#include <sgl_kernel/utils.cuh>  // For LaunchKernel

#include <dlpack/dlpack.h>
#include <tvm/ffi/container/tensor.h>

#include <cassert>
#include <cstdint>

namespace {

/// Writes one int32 at `data[offset]`: with an offset far out of any allocation, an illegal
/// memory access (cudaErrorIllegalAddress), which loses the CUDA context for good.
__global__ void write_out_of_bounds_kernel(std::int32_t* data, std::int64_t offset) {
  data[offset] = 1;
}

/// A device-side assert that fails when `data[0]` is not 1 (cudaErrorAssert, also sticky).
__global__ void device_assert_kernel(const std::int32_t* data) {
  assert(data[0] == 1);
}

/// One thread writes `data[offset]` (`data`: a CUDA int32 tensor; `offset` may be negative).
void write_out_of_bounds(tvm::ffi::TensorView data, std::int64_t offset) {
  using namespace host;
  auto n = SymbolicSize{"num_elements"};
  auto device = SymbolicDevice{};
  TensorMatcher({n}).with_dtype<std::int32_t>().with_device<kDLCUDA>(device).verify(data, "data");
  LaunchKernel(1, 1, device.unwrap())(
      write_out_of_bounds_kernel, static_cast<std::int32_t*>(data.data_ptr()), offset);
}

/// One thread asserts `data[0] == 1` on the device.
void device_assert(tvm::ffi::TensorView data) {
  using namespace host;
  auto n = SymbolicSize{"num_elements"};
  auto device = SymbolicDevice{};
  TensorMatcher({n}).with_dtype<std::int32_t>().with_device<kDLCUDA>(device).verify(data, "data");
  LaunchKernel(1, 1, device.unwrap())(
      device_assert_kernel, static_cast<const std::int32_t*>(data.data_ptr()));
}

}  // namespace
