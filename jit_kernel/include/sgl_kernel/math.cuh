// Device math dispatched through dtype_trait: device::math::max/min/abs/sqrt/rsqrt/exp/sin/cos.
#pragma once

#include <sgl_kernel/type.cuh>   // For dtype_trait
#include <sgl_kernel/utils.cuh>  // For SGL_DEVICE

namespace device::math {

inline constexpr float log2e = 1.4426950408889634f;  // log2(e)
inline constexpr float loge2 = 0.6931471805599453f;  // ln(2)
static_assert(log2e * loge2 > 0.9999f && log2e * loge2 < 1.0001f, "log2e * ln2 must be 1");
inline constexpr float FP8_E4M3_MAX = 448.0f;

template <typename T>
SGL_DEVICE T max(T a, T b) {
  return dtype_trait<T>::max(a, b);
}
template <typename T>
SGL_DEVICE T min(T a, T b) {
  return dtype_trait<T>::min(a, b);
}
template <typename T>
SGL_DEVICE T abs(T x) {
  return dtype_trait<T>::abs(x);
}
template <typename T>
SGL_DEVICE T sqrt(T x) {
  return dtype_trait<T>::sqrt(x);
}
template <typename T>
SGL_DEVICE T rsqrt(T x) {
  return dtype_trait<T>::rsqrt(x);
}
template <typename T>
SGL_DEVICE T exp(T x) {
  return dtype_trait<T>::exp(x);
}
template <typename T>
SGL_DEVICE T sin(T x) {
  return dtype_trait<T>::sin(x);
}
template <typename T>
SGL_DEVICE T cos(T x) {
  return dtype_trait<T>::cos(x);
}

}  // namespace device::math
