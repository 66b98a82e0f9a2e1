// RMSNorm as a row operation of the row building block (sgl_kernel/impl/row/map.cuh): rmsnorm,
// fused_add_rmsnorm and qknorm share it.
#pragma once

#include <sgl_kernel/utils.cuh>  // For SGL_DEVICE

namespace device::norm {

/// y = x * rsqrt(mean(x^2) + eps), in fp32 (the weight, if any, is applied after).
struct RmsOp {
  /// apply() is a product: a weighted decode batch forms x * weight before the row's sum.
  static constexpr bool kMultiplies = true;
  float eps;

  SGL_DEVICE float term(float x) const { return x * x; }
  SGL_DEVICE float finish(float sum, float inv_size) const { return rsqrtf(sum * inv_size + eps); }
  SGL_DEVICE float apply(float x, float value) const { return x * value; }
};

}  // namespace device::norm
