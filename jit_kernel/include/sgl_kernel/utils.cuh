// Device-side basics and the kernel launcher: type aliases (fp16_t, bf16_t, ...), SGL_DEVICE,
// PDL helpers, load_as/store_as, RuntimeDeviceCheck and host::LaunchKernel.
#pragma once

#include <sgl_kernel/utils.h>  // For DebugInfo, panic, RuntimeCheck

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>
#include <tvm/ffi/extra/c_env_api.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#ifndef SGL_CUDA_ARCH
#error \
    "SGL_CUDA_ARCH is not defined: build through jit_kernel.utils.load_jit (or pass -DSGL_CUDA_ARCH=900)"
#endif

#if defined(__CUDA_ARCH__)
static_assert(__CUDA_ARCH__ == SGL_CUDA_ARCH,
              "device pass compiled for another arch than SGL_CUDA_ARCH");
#endif

#define SGL_ARCH_HOPPER_OR_GREATER (SGL_CUDA_ARCH >= 900)
#define SGL_ARCH_BLACKWELL_OR_GREATER (SGL_CUDA_ARCH >= 1000 && CUDART_VERSION >= 12090)

/// Every device helper is a force-inlined device function.
#define SGL_DEVICE __forceinline__ __device__

using fp32_t = float;
using fp16_t = __half;
using bf16_t = __nv_bfloat16;
using fp8_e4m3_t = __nv_fp8_e4m3;
using fp8_e5m2_t = __nv_fp8_e5m2;

using fp32x2_t = float2;
using fp16x2_t = __half2;
using bf16x2_t = __nv_bfloat162;
using fp8x2_e4m3_t = __nv_fp8x2_e4m3;
using fp8x2_e5m2_t = __nv_fp8x2_e5m2;
using fp32x4_t = float4;

namespace device {

inline constexpr std::uint32_t kWarpThreads = 32u;
inline constexpr std::uint32_t kFullMask = 0xffffffffu;
/// Widest vector access worth emitting on the target: 32 bytes on Blackwell, 16 bytes before.
inline constexpr std::size_t kMaxVecBytes = SGL_ARCH_BLACKWELL_OR_GREATER ? 32 : 16;

/// With PDL, wait until the preceding kernel's results are visible. Call before reading its
/// outputs.
template <bool kUsePDL>
SGL_DEVICE void PDLWaitPrimary() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if constexpr (kUsePDL) asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/// With PDL, let the next kernel in the stream start launching. Call after the last store.
template <bool kUsePDL>
SGL_DEVICE void PDLTriggerSecondary() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if constexpr (kUsePDL) asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

/// With PDL, wait for the preceding kernel, then let the next one start launching at once: its
/// launch overlaps this kernel's work (its own PDLWaitPrimary still waits for this grid to end).
/// For kernels whose grid is one wave at the sizes where launch latency matters (decode).
template <bool kUsePDL>
SGL_DEVICE void PDLWaitPrimaryTriggerSecondary() {
  PDLWaitPrimary<kUsePDL>();
  PDLTriggerSecondary<kUsePDL>();
}

namespace pointer {

/// `ptr` advanced by the sum of `offsets`, counted in units of T (bytes by default).
template <typename T = char, typename... Offsets>
SGL_DEVICE void* offset(void* ptr, Offsets... offsets) {
  return static_cast<T*>(ptr) + (std::ptrdiff_t{0} + ... + static_cast<std::ptrdiff_t>(offsets));
}

template <typename T = char, typename... Offsets>
SGL_DEVICE const void* offset(const void* ptr, Offsets... offsets) {
  return static_cast<const T*>(ptr) +
         (std::ptrdiff_t{0} + ... + static_cast<std::ptrdiff_t>(offsets));
}

}  // namespace pointer

/// `static_cast<const T*>(ptr)[offset]`; T must be spelled out.
template <typename T>
SGL_DEVICE T load_as(const void* ptr, std::int64_t offset = 0) {
  return static_cast<const T*>(ptr)[offset];
}

/// `static_cast<T*>(ptr)[offset] = value`; T must be spelled out.
template <typename T>
SGL_DEVICE void store_as(void* ptr, std::type_identity_t<T> value, std::int64_t offset = 0) {
  static_cast<T*>(ptr)[offset] = value;
}

}  // namespace device

namespace host {

/// Panics with "CUDA error: <name>: <description>" unless `error` is cudaSuccess.
inline void RuntimeDeviceCheck(cudaError_t error, DebugInfo location = {}) {
  if (error != cudaSuccess) [[unlikely]] {
    panic(location, "CUDA error: ", cudaGetErrorName(error), ": ", cudaGetErrorString(error));
  }
}

/// Checks (and clears) the last CUDA error of this thread.
inline void RuntimeDeviceCheck(DebugInfo location = {}) {
  RuntimeDeviceCheck(cudaGetLastError(), location);
}

/// Launches a kernel on the stream tvm-ffi received from torch for this call, with optional PDL,
/// and checks the launch. Use as a temporary:
///   LaunchKernel(grid, block, device).enable_pdl(kUsePDL)(kernel, args...);
/// A grid with zero blocks launches nothing (empty inputs need no special casing).
class LaunchKernel {
 public:
  explicit LaunchKernel(dim3 grid,
                        dim3 block,
                        DLDevice device,
                        std::size_t dynamic_smem = 0,
                        DebugInfo location = {}) noexcept
      : LaunchKernel(grid, block, resolve_device(device), dynamic_smem, location) {}

  explicit LaunchKernel(dim3 grid,
                        dim3 block,
                        cudaStream_t stream,
                        std::size_t dynamic_smem = 0,
                        DebugInfo location = {}) noexcept
      : m_location(location) {
    m_config.gridDim = grid;
    m_config.blockDim = block;
    m_config.dynamicSmemBytes = dynamic_smem;
    m_config.stream = stream;
    m_config.attrs = m_attrs;
    m_config.numAttrs = 0;
  }

  LaunchKernel(const LaunchKernel&) = delete;
  LaunchKernel& operator=(const LaunchKernel&) = delete;

  /// The stream tvm-ffi set for `device` from torch's current stream for this call.
  static cudaStream_t resolve_device(DLDevice device) noexcept {
    return static_cast<cudaStream_t>(TVMFFIEnvGetStream(device.device_type, device.device_id));
  }

  /// Programmatic Dependent Launch (SM90+): the kernel may start before the previous one ends;
  /// it must call device::PDLWaitPrimary before reading that kernel's outputs.
  LaunchKernel& enable_pdl(bool enabled = true) noexcept {
    m_use_pdl = enabled;
    return *this;
  }

  /// Thread-block cluster dimensions (SM90+).
  LaunchKernel& enable_cluster(dim3 cluster) noexcept {
    m_cluster = cluster;
    m_use_cluster = true;
    return *this;
  }

  template <typename... KernelArgs, typename... Args>
  void operator()(void (*kernel)(KernelArgs...), Args&&... args) {
    const auto& grid = m_config.gridDim;
    if (static_cast<std::uint64_t>(grid.x) * grid.y * grid.z == 0) return;
    m_config.numAttrs = 0;
    if (m_use_pdl) {
      auto& attr = m_attrs[m_config.numAttrs++];
      attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
      attr.val.programmaticStreamSerializationAllowed = 1;
    }
    if (m_use_cluster) {
      auto& attr = m_attrs[m_config.numAttrs++];
      attr.id = cudaLaunchAttributeClusterDimension;
      attr.val.clusterDim.x = m_cluster.x;
      attr.val.clusterDim.y = m_cluster.y;
      attr.val.clusterDim.z = m_cluster.z;
    }
    RuntimeDeviceCheck(cudaLaunchKernelEx(&m_config, kernel, std::forward<Args>(args)...),
                       m_location);
  }

 private:
  cudaLaunchConfig_t m_config{};
  cudaLaunchAttribute m_attrs[2]{};
  dim3 m_cluster{1, 1, 1};
  bool m_use_pdl = false;
  bool m_use_cluster = false;
  DebugInfo m_location;
};

}  // namespace host
