// Describing a tensor in messages: device names, data_address, describe(view) ("shape=[...],
// strides=[...], dtype=..., device=...").
#pragma once

#include <sgl_kernel/dtype.h>  // For dtype_name

#include <dlpack/dlpack.h>
#include <tvm/ffi/container/tensor.h>

#include <cstdint>
#include <string>

namespace host {

/// "cpu", "cuda", "cuda_host", "rocm", ... for a DLPack device type.
inline std::string device_type_name(DLDeviceType type) {
  switch (type) {
    case kDLCPU:
      return "cpu";
    case kDLCUDA:
      return "cuda";
    case kDLCUDAHost:
      return "cuda_host";
    case kDLOpenCL:
      return "opencl";
    case kDLVulkan:
      return "vulkan";
    case kDLMetal:
      return "metal";
    case kDLVPI:
      return "vpi";
    case kDLROCM:
      return "rocm";
    case kDLROCMHost:
      return "rocm_host";
    case kDLExtDev:
      return "ext_dev";
    case kDLCUDAManaged:
      return "cuda_managed";
    case kDLOneAPI:
      return "oneapi";
    case kDLWebGPU:
      return "webgpu";
    case kDLHexagon:
      return "hexagon";
    default:
      return "device_type(" + std::to_string(static_cast<int>(type)) + ")";
  }
}

/// "cuda:0", "cpu:0".
inline std::string device_name(DLDevice device) {
  return device_type_name(device.device_type) + ":" + std::to_string(device.device_id);
}

/// The address of element 0 of `view`: its data pointer plus the DLPack byte offset (torch
/// exports views with the storage offset already in the data pointer and a byte offset of 0,
/// but DLPack allows either). Kernels that index a tensor should start from this address.
inline void* data_address(const tvm::ffi::TensorView& view) {
  return static_cast<char*>(view.data_ptr()) + view.byte_offset();
}

namespace details {

template <typename Range, typename F>
std::string join(const Range& items, F&& fmt) {
  std::string out = "[";
  bool first = true;
  for (const auto& item : items) {
    if (!first) out += ", ";
    out += fmt(item);
    first = false;
  }
  return out + "]";
}

inline std::string format_ints(tvm::ffi::ShapeView values) {
  return join(values, [](std::int64_t v) { return std::to_string(v); });
}

/// "shape=[1000], strides=[1], dtype=float16, device=cuda:0".
inline std::string describe(const tvm::ffi::TensorView& view) {
  return "shape=" + format_ints(view.shape()) + ", strides=" + format_ints(view.strides()) +
         ", dtype=" + dtype_name(view.dtype()) + ", device=" + device_name(view.device());
}

}  // namespace details

}  // namespace host
