// CUDA runtime queries cached per device: host::runtime::get_sm_count, get_cc_major,
// get_blocks_per_sm, get_runtime_version, get_available_dynamic_smem_per_block.
#pragma once

#include <sgl_kernel/utils.h>    // For RuntimeCheck
#include <sgl_kernel/utils.cuh>  // For RuntimeDeviceCheck

#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <map>
#include <mutex>
#include <tuple>

namespace host::runtime {

namespace details {

inline constexpr int kMaxDevices = 64;

inline int current_device() {
  int device = 0;
  RuntimeDeviceCheck(cudaGetDevice(&device));
  return device;
}

/// Runs `query(device_id)` once per device and caches the (positive) result in `cache`.
template <typename Query>
int cached_per_device(std::array<std::atomic<int>, kMaxDevices>& cache,
                      int device_id,
                      Query&& query) {
  if (device_id < 0) device_id = current_device();
  RuntimeCheck(device_id < kMaxDevices, "device id ", device_id, " exceeds ", kMaxDevices);
  int value = cache[device_id].load(std::memory_order_relaxed);
  if (value == 0) {
    value = query(device_id);
    cache[device_id].store(value, std::memory_order_relaxed);
  }
  return value;
}

inline int device_attribute(cudaDeviceAttr attr, int device_id) {
  int value = 0;
  RuntimeDeviceCheck(cudaDeviceGetAttribute(&value, attr, device_id));
  return value;
}

/// Makes `device_id` current for a scope (occupancy queries use the current device).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device_id) : m_previous(current_device()) {
    if (device_id != m_previous) RuntimeDeviceCheck(cudaSetDevice(device_id));
  }
  ~DeviceGuard() { cudaSetDevice(m_previous); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int m_previous;
};

}  // namespace details

/// Number of SMs of `device_id` (-1: the current device). Cached per device.
inline int get_sm_count(int device_id = -1) {
  static std::array<std::atomic<int>, details::kMaxDevices> cache{};
  return details::cached_per_device(cache, device_id, [](int id) {
    return details::device_attribute(cudaDevAttrMultiProcessorCount, id);
  });
}

/// Compute capability major version of `device_id` (-1: the current device). Cached per device.
inline int get_cc_major(int device_id = -1) {
  static std::array<std::atomic<int>, details::kMaxDevices> cache{};
  return details::cached_per_device(cache, device_id, [](int id) {
    return details::device_attribute(cudaDevAttrComputeCapabilityMajor, id);
  });
}

/// The CUDA runtime version (e.g. 13000).
inline int get_runtime_version() {
  static const int version = [] {
    int v = 0;
    RuntimeDeviceCheck(cudaRuntimeGetVersion(&v));
    return v;
  }();
  return version;
}

/// Max resident blocks of `kernel` per SM on `device_id` (-1: the current device).
/// Cached per (device, kernel, block_dim, dynamic_smem).
template <typename... KernelArgs>
int get_blocks_per_sm(void (*kernel)(KernelArgs...),
                      int block_dim,
                      std::size_t dynamic_smem = 0,
                      int device_id = -1) {
  using Key = std::tuple<int, const void*, int, std::size_t>;
  static std::mutex mutex;
  static std::map<Key, int> cache;
  if (device_id < 0) device_id = details::current_device();
  const Key key{device_id, reinterpret_cast<const void*>(kernel), block_dim, dynamic_smem};
  {
    std::lock_guard lock(mutex);
    if (const auto it = cache.find(key); it != cache.end()) return it->second;
  }
  int blocks = 0;
  {
    details::DeviceGuard guard(device_id);
    RuntimeDeviceCheck(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, block_dim, dynamic_smem));
  }
  std::lock_guard lock(mutex);
  cache.emplace(key, blocks);
  return blocks;
}

/// Dynamic shared memory available per block when `num_blocks` blocks of `block_size` threads
/// share an SM (current device). Not cached.
template <typename... KernelArgs>
std::size_t get_available_dynamic_smem_per_block(void (*kernel)(KernelArgs...),
                                                 int num_blocks,
                                                 int block_size) {
  std::size_t bytes = 0;
  RuntimeDeviceCheck(
      cudaOccupancyAvailableDynamicSMemPerBlock(&bytes, kernel, num_blocks, block_size));
  return bytes;
}

}  // namespace host::runtime
