// Atomic operations missing from CUDA: device::atomic::max(float*, float).
#pragma once

#include <sgl_kernel/utils.cuh>  // For SGL_DEVICE

namespace device::atomic {

/// Atomic float max; returns the old value. Uses the IEEE-754 ordering trick: non-negative floats
/// order like signed ints, negative floats order inversely like unsigned ints. NaN is not handled.
SGL_DEVICE float max(float* addr, float value) {
  if (!signbit(value)) {
    return __int_as_float(atomicMax(reinterpret_cast<int*>(addr), __float_as_int(value)));
  }
  return __uint_as_float(atomicMin(reinterpret_cast<unsigned int*>(addr), __float_as_uint(value)));
}

}  // namespace device::atomic
