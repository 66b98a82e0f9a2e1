// Element-type traits: dtype_trait<T> (conversions and math per type), packed_t<T> and
// device::cast<To>(from).
#pragma once

#include <sgl_kernel/utils.cuh>  // For fp16_t, bf16_t, fp32_t and packed aliases, SGL_DEVICE

#include <type_traits>

template <typename T>
struct dtype_trait {};

template <>
struct dtype_trait<fp32_t> {
  using self_t = fp32_t;
  using packed_t = fp32x2_t;
  template <typename S>
  SGL_DEVICE static fp32_t from(S value) {
    if constexpr (std::is_same_v<S, fp16_t>) {
      return __half2float(value);
    } else if constexpr (std::is_same_v<S, bf16_t>) {
      return __bfloat162float(value);
    } else {
      return static_cast<fp32_t>(value);
    }
  }
  SGL_DEVICE static fp32_t abs(fp32_t x) { return fabsf(x); }
  SGL_DEVICE static fp32_t sqrt(fp32_t x) { return sqrtf(x); }
  SGL_DEVICE static fp32_t rsqrt(fp32_t x) { return rsqrtf(x); }
  SGL_DEVICE static fp32_t exp(fp32_t x) { return expf(x); }
  SGL_DEVICE static fp32_t sin(fp32_t x) { return sinf(x); }
  SGL_DEVICE static fp32_t cos(fp32_t x) { return cosf(x); }
  SGL_DEVICE static fp32_t max(fp32_t x, fp32_t y) { return fmaxf(x, y); }
  SGL_DEVICE static fp32_t min(fp32_t x, fp32_t y) { return fminf(x, y); }
};

namespace device::details {

// Half-precision math goes through fp32 and rounds once at the end.
template <typename T>
struct via_fp32 {
  using F = dtype_trait<fp32_t>;
  SGL_DEVICE static float up(T x) { return F::from(x); }
  SGL_DEVICE static T down(float x) { return dtype_trait<T>::from(x); }
  SGL_DEVICE static T abs(T x) { return down(F::abs(up(x))); }
  SGL_DEVICE static T sqrt(T x) { return down(F::sqrt(up(x))); }
  SGL_DEVICE static T rsqrt(T x) { return down(F::rsqrt(up(x))); }
  SGL_DEVICE static T exp(T x) { return down(F::exp(up(x))); }
  SGL_DEVICE static T sin(T x) { return down(F::sin(up(x))); }
  SGL_DEVICE static T cos(T x) { return down(F::cos(up(x))); }
  SGL_DEVICE static T max(T x, T y) { return down(F::max(up(x), up(y))); }
  SGL_DEVICE static T min(T x, T y) { return down(F::min(up(x), up(y))); }
};

}  // namespace device::details

template <>
struct dtype_trait<fp16_t> : device::details::via_fp32<fp16_t> {
  using self_t = fp16_t;
  using packed_t = fp16x2_t;
  template <typename S>
  SGL_DEVICE static fp16_t from(S value) {
    if constexpr (std::is_same_v<S, fp16_t>) {
      return value;
    } else if constexpr (std::is_same_v<S, bf16_t>) {
      return __float2half_rn(__bfloat162float(value));
    } else {
      return __float2half_rn(static_cast<float>(value));
    }
  }
};

template <>
struct dtype_trait<bf16_t> : device::details::via_fp32<bf16_t> {
  using self_t = bf16_t;
  using packed_t = bf16x2_t;
  template <typename S>
  SGL_DEVICE static bf16_t from(S value) {
    if constexpr (std::is_same_v<S, bf16_t>) {
      return value;
    } else if constexpr (std::is_same_v<S, fp16_t>) {
      return __float2bfloat16_rn(__half2float(value));
    } else {
      return __float2bfloat16_rn(static_cast<float>(value));
    }
  }
};

template <>
struct dtype_trait<fp32x2_t> {
  using self_t = fp32x2_t;
  using packed_t = fp32x4_t;
  template <typename S>
  SGL_DEVICE static fp32x2_t from(S value) {
    if constexpr (std::is_same_v<S, fp16x2_t>) {
      return __half22float2(value);
    } else if constexpr (std::is_same_v<S, bf16x2_t>) {
      return __bfloat1622float2(value);
    } else {
      static_assert(std::is_same_v<S, fp32x2_t>, "fp32x2_t converts from fp16x2_t or bf16x2_t");
      return value;
    }
  }
};

template <>
struct dtype_trait<fp16x2_t> {
  using self_t = fp16x2_t;
  using packed_t = void;
  template <typename S>
  SGL_DEVICE static fp16x2_t from(S value) {
    static_assert(std::is_same_v<S, fp32x2_t>, "fp16x2_t converts from fp32x2_t");
    return __float22half2_rn(value);
  }
};

template <>
struct dtype_trait<bf16x2_t> {
  using self_t = bf16x2_t;
  using packed_t = void;
  template <typename S>
  SGL_DEVICE static bf16x2_t from(S value) {
    static_assert(std::is_same_v<S, fp32x2_t>, "bf16x2_t converts from fp32x2_t");
    return __float22bfloat162_rn(value);
  }
};

/// The two-lane type of T: fp16_t -> fp16x2_t, bf16_t -> bf16x2_t, fp32_t -> fp32x2_t.
template <typename T>
using packed_t = typename dtype_trait<T>::packed_t;

namespace device {

/// Converts through dtype_trait<To>::from, e.g. cast<fp32_t>(h) or cast<fp32x2_t, fp16x2_t>(v).
template <typename To, typename From>
SGL_DEVICE To cast(From value) {
  return dtype_trait<To>::from(value);
}

}  // namespace device
