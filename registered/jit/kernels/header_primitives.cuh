// Test kernels for the primitives of the header library that no shipped single-GPU kernel uses:
// warp.cuh, cta.cuh, math.cuh, tile.cuh, atomic.cuh, signal.cuh and ipc.cuh, and the
// value-returning form of dtype_dispatch.h (the kernels' bodies return nothing). Each export runs
// one primitive on inputs from registered/jit/test_header_primitives.py, which compares the results
// with torch. Also what no shipped kernel calls: SymbolicDType::set_value (symbolic.h),
// load_as/store_as (utils.cuh), AlignedVector::fill and kBytes (vec.cuh). Not part of the package:
// a test harness.
#include <sgl_kernel/dtype_dispatch.h>  // For dispatch_dtype
#include <sgl_kernel/tensor.h>    // For TensorMatcher, SymbolicSize, SymbolicDType, data_address
#include <sgl_kernel/utils.h>     // For RuntimeCheck
#include <sgl_kernel/atomic.cuh>  // For device::atomic::max
#include <sgl_kernel/cta.cuh>     // For device::cta::reduce_sum, reduce_max
#include <sgl_kernel/ipc.cuh>  // For host::ipc::allocate_exportable, export_handle, open_handle, ...
#include <sgl_kernel/math.cuh>    // For device::math::max, min, abs, sqrt, ..., log2e, FP8_E4M3_MAX
#include <sgl_kernel/signal.cuh>  // For device::signal::store_release_sys, wait_at_least_sys, ...
#include <sgl_kernel/tile.cuh>    // For device::tile::Memory
#include <sgl_kernel/utils.cuh>   // For LaunchKernel, load_as, store_as, kWarpThreads, fp16_t
#include <sgl_kernel/vec.cuh>     // For device::AlignedVector
#include <sgl_kernel/warp.cuh>    // For device::warp::reduce_sum, reduce_max

#include <cuda_runtime.h>
#include <dlpack/dlpack.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/string.h>
#include <cuda/atomic>

#include <cstddef>
#include <cstdint>

namespace {

using host::LaunchKernel;
using host::RuntimeCheck;
using host::SymbolicDevice;
using host::SymbolicDType;
using host::SymbolicSize;
using host::TensorMatcher;
using tvm::ffi::TensorView;

template <typename T>
T* data_of(const TensorView& view) {
  return static_cast<T*>(host::data_address(view));
}

// ------------------------------------------------------------------------------ dtype_dispatch.h

/// sizeof(T) for the T that x's dtype selects among fp16/bf16/fp32: dispatch_dtype's result.
std::int64_t dispatch_element_size(TensorView x) {
  return host::dispatch_dtype<fp16_t, bf16_t, fp32_t>(
      x.dtype(), "dispatch_element_size", "x", []<typename T>() {
        return static_cast<std::int64_t>(sizeof(T));
      });
}

// ------------------------------------------------------------------------------------ symbolic.h

/// Pins a SymbolicDType restricted to fp16/bf16 to x's dtype, `times` times, and returns the
/// pinned dtype's bits: set_value's checks (an allowed option, not already bound).
std::int64_t symbolic_dtype_pin(TensorView x, std::int64_t times) {
  auto dtype = SymbolicDType{};
  dtype.set_options<fp16_t, bf16_t>();
  for (std::int64_t i = 0; i < times; ++i) dtype.set_value(x.dtype());
  return dtype.get_value().value().bits;
}

// ------------------------------------------------------------------------------------ warp.cuh

/// One warp per row of 32 values; every lane stores what it got back (each lane gets the result).
template <typename T>
__global__ void warp_reduce_sum_kernel(T* out, const T* x) {
  const auto i = blockIdx.x * device::kWarpThreads + threadIdx.x;
  out[i] = device::warp::reduce_sum(x[i]);
}

template <typename T>
__global__ void warp_reduce_max_kernel(T* out, const T* x) {
  const auto i = blockIdx.x * device::kWarpThreads + threadIdx.x;
  out[i] = device::warp::reduce_max(x[i]);
}

/// out[r, lane] = sum of x[r, :] for x [rows, 32], float32 or int32.
void warp_reduce_sum(TensorView out, TensorView x) {
  auto rows = SymbolicSize{"rows"};
  auto dtype = SymbolicDType{};
  auto device = SymbolicDevice{};
  TensorMatcher({rows, device::kWarpThreads})
      .with_dtype<float, std::int32_t>(dtype)
      .with_device<kDLCUDA>(device)
      .verify(x, "x")
      .verify(out, "out");
  const auto grid = static_cast<unsigned>(rows.unwrap());
  if (dtype.is_type<float>()) {
    LaunchKernel(grid, device::kWarpThreads, device.unwrap())(
        warp_reduce_sum_kernel<float>, data_of<float>(out), data_of<const float>(x));
  } else {
    LaunchKernel(grid, device::kWarpThreads, device.unwrap())(warp_reduce_sum_kernel<std::int32_t>,
                                                              data_of<std::int32_t>(out),
                                                              data_of<const std::int32_t>(x));
  }
}

/// out[r, lane] = max of x[r, :] for x [rows, 32], float32, float16 or bfloat16.
void warp_reduce_max(TensorView out, TensorView x) {
  auto rows = SymbolicSize{"rows"};
  auto dtype = SymbolicDType{};
  auto device = SymbolicDevice{};
  TensorMatcher({rows, device::kWarpThreads})
      .with_dtype<float, fp16_t, bf16_t>(dtype)
      .with_device<kDLCUDA>(device)
      .verify(x, "x")
      .verify(out, "out");
  const auto grid = static_cast<unsigned>(rows.unwrap());
  LaunchKernel launch(grid, device::kWarpThreads, device.unwrap());
  if (dtype.is_type<float>()) {
    launch(warp_reduce_max_kernel<float>, data_of<float>(out), data_of<const float>(x));
  } else if (dtype.is_type<fp16_t>()) {
    launch(warp_reduce_max_kernel<fp16_t>, data_of<fp16_t>(out), data_of<const fp16_t>(x));
  } else {
    launch(warp_reduce_max_kernel<bf16_t>, data_of<bf16_t>(out), data_of<const bf16_t>(x));
  }
}

// ------------------------------------------------------------------------------------- cta.cuh

/// One CTA per row, one value per thread; every thread stores the CTA's sum and max.
__global__ void cta_reduce_kernel(float* sum_out, float* max_out, const float* x) {
  __shared__ float smem[device::kWarpThreads];
  const auto i = blockIdx.x * blockDim.x + threadIdx.x;
  const float value = x[i];
  device::cta::reduce_sum(value, smem);
  __syncthreads();
  sum_out[i] = smem[0];
  __syncthreads();  // every thread has read smem[0] before reduce_max overwrites smem
  device::cta::reduce_max(value, smem);
  __syncthreads();
  max_out[i] = smem[0];
}

/// sum_out[r, t] = sum of x[r, :], max_out[r, t] = max of x[r, :] for x [rows, threads], float32,
/// threads a multiple of 32 up to 1024 (a warp reduction needs every lane of its warp).
void cta_reduce(TensorView sum_out, TensorView max_out, TensorView x) {
  auto rows = SymbolicSize{"rows"};
  auto threads = SymbolicSize{"threads"};
  auto device = SymbolicDevice{};
  TensorMatcher({rows, threads})
      .with_dtype<float>()
      .with_device<kDLCUDA>(device)
      .verify(x, "x")
      .verify(sum_out, "sum_out")
      .verify(max_out, "max_out");
  const std::int64_t block = threads.unwrap();
  RuntimeCheck(block >= 32 && block <= 1024 && block % 32 == 0,
               "cta_reduce: x must have a multiple of 32 columns up to 1024 (one per thread), got ",
               block);
  LaunchKernel(static_cast<unsigned>(rows.unwrap()), static_cast<unsigned>(block), device.unwrap())(
      cta_reduce_kernel, data_of<float>(sum_out), data_of<float>(max_out), data_of<const float>(x));
}

// ------------------------------------------------------------------------------------ math.cuh

inline constexpr int kMathOps = 8;  // rows of math_ops' output, in this order:

/// out[k, i] for k = max(x, y), min(x, y), abs(x), sqrt(y), rsqrt(y), exp(x), sin(x), cos(x).
template <typename T>
__global__ void math_kernel(T* out, const T* x, const T* y, std::int64_t n) {
  namespace math = device::math;
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const T a = x[i];
  const T b = y[i];
  out[0 * n + i] = math::max(a, b);
  out[1 * n + i] = math::min(a, b);
  out[2 * n + i] = math::abs(a);
  out[3 * n + i] = math::sqrt(b);
  out[4 * n + i] = math::rsqrt(b);
  out[5 * n + i] = math::exp(a);
  out[6 * n + i] = math::sin(a);
  out[7 * n + i] = math::cos(a);
}

/// out [8, n] from x, y [n]; float32, float16 or bfloat16 (y > 0 for sqrt and rsqrt).
void math_ops(TensorView out, TensorView x, TensorView y) {
  auto n = SymbolicSize{"n"};
  auto dtype = SymbolicDType{};
  auto device = SymbolicDevice{};
  TensorMatcher({n})
      .with_dtype<float, fp16_t, bf16_t>(dtype)
      .with_device<kDLCUDA>(device)
      .verify(x, "x")
      .verify(y, "y");
  TensorMatcher({kMathOps, n}).with_dtype(dtype).with_device<kDLCUDA>(device).verify(out, "out");
  const std::int64_t count = n.unwrap();
  const auto grid = static_cast<unsigned>((count + 255) / 256);
  LaunchKernel launch(grid, 256, device.unwrap());
  if (dtype.is_type<float>()) {
    launch(math_kernel<float>,
           data_of<float>(out),
           data_of<const float>(x),
           data_of<const float>(y),
           count);
  } else if (dtype.is_type<fp16_t>()) {
    launch(math_kernel<fp16_t>,
           data_of<fp16_t>(out),
           data_of<const fp16_t>(x),
           data_of<const fp16_t>(y),
           count);
  } else {
    launch(math_kernel<bf16_t>,
           data_of<bf16_t>(out),
           data_of<const bf16_t>(x),
           data_of<const bf16_t>(y),
           count);
  }
}

__global__ void math_constants_kernel(float* out) {
  out[0] = device::math::log2e;
  out[1] = device::math::loge2;
  out[2] = device::math::FP8_E4M3_MAX;
}

/// out [3] float32 = log2e, loge2, FP8_E4M3_MAX as device code sees them.
void math_constants(TensorView out) {
  auto device = SymbolicDevice{};
  TensorMatcher({3}).with_dtype<float>().with_device<kDLCUDA>(device).verify(out, "out");
  LaunchKernel(1, 1, device.unwrap())(math_constants_kernel, data_of<float>(out));
}

// --------------------------------------------------------------------------- utils.cuh, vec.cuh

static_assert(device::AlignedVector<fp16_t, 8>::kBytes == 16 &&
                  device::AlignedVector<float, 2>::kBytes == 8,
              "AlignedVector::kBytes is sizeof(T) * N");

/// out[0..3] = x[0..3] through load_as/store_as (offset 0 by default, then 1..3); out[4..7] =
/// value through AlignedVector::fill and a store of vector 1.
__global__ void load_store_fill_kernel(float* out, const float* x, float value) {
  device::store_as<float>(out, device::load_as<float>(x));
  for (std::int64_t i = 1; i < 4; ++i)
    device::store_as<float>(out, device::load_as<float>(x, i), i);
  device::AlignedVector<float, 4> filled;
  filled.fill(value);
  filled.store(out, 1);
}

/// out: float32 [8], x: float32 [4], both on one GPU; see load_store_fill_kernel.
void load_store_fill(TensorView out, TensorView x, double value) {
  auto device = SymbolicDevice{};
  TensorMatcher({4}).with_dtype<float>().with_device<kDLCUDA>(device).verify(x, "x");
  TensorMatcher({8}).with_dtype<float>().with_device<kDLCUDA>(device).verify(out, "out");
  LaunchKernel(1, 1, device.unwrap())(load_store_fill_kernel,
                                      data_of<float>(out),
                                      data_of<const float>(x),
                                      static_cast<float>(value));
}

// ------------------------------------------------------------------------------------ tile.cuh

enum TileGroup : std::int64_t { kTileThread = 0, kTileWarp = 1, kTileCta = 2 };

/// The group copies x[start, start + count) to out, adding 1, through tile::Memory; it visits one
/// step past the last one (in_bound must refuse it). `size`: the group's thread count.
__device__ void tile_copy_row(const device::tile::Memory<float>& mem,
                              float* out,
                              const float* x,
                              std::int64_t count,
                              std::int64_t size) {
  const std::int64_t steps = (count + size - 1) / size;
  for (std::int64_t step = 0; step <= steps; ++step) {
    if (mem.in_bound(count, step)) mem.store(out, mem.load(x, step) + 1.0f, step);
  }
}

/// Row r of out/x (row_stride apart, data from `start`) is copied by: thread r (thread group),
/// warp r (its first n lanes, all 32 for n = 0) or CTA r (its first n threads, all for n = 0).
__global__ void tile_copy_kernel(float* out,
                                 const float* x,
                                 std::int64_t row_stride,
                                 std::int64_t start,
                                 std::int64_t count,
                                 std::int64_t group,
                                 std::uint32_t n) {
  using Memory = device::tile::Memory<float>;
  std::int64_t row = blockIdx.x;
  if (group == kTileThread) {
    row = threadIdx.x;
    const std::int64_t offset = row * row_stride + start;
    tile_copy_row(Memory::thread(), out + offset, x + offset, count, 1);
  } else if (group == kTileWarp) {
    row = threadIdx.x / device::kWarpThreads;
    const std::int64_t offset = row * row_stride + start;
    const std::uint32_t size = n == 0 ? device::kWarpThreads : n;
    if (threadIdx.x % device::kWarpThreads >= size) return;
    const Memory mem = n == 0 ? Memory::warp() : Memory::warp(n);
    tile_copy_row(mem, out + offset, x + offset, count, size);
  } else {
    const std::int64_t offset = row * row_stride + start;
    const std::uint32_t size = n == 0 ? blockDim.x : n;
    if (threadIdx.x >= size) return;
    const Memory mem = n == 0 ? Memory::cta() : Memory::cta(n);
    tile_copy_row(mem, out + offset, x + offset, count, size);
  }
}

/// out[r, start:start+count] = x[r, start:start+count] + 1 for every row r of x, out [rows, L]
/// (float32), copied by a tile::Memory group (0 thread, 1 warp, 2 CTA of `threads` threads) of
/// n threads (0: the default size). Nothing else of out is written.
void tile_copy(TensorView out,
               TensorView x,
               std::int64_t start,
               std::int64_t count,
               std::int64_t group,
               std::int64_t n,
               std::int64_t threads) {
  auto rows = SymbolicSize{"rows"};
  auto length = SymbolicSize{"length"};
  auto device = SymbolicDevice{};
  TensorMatcher({rows, length})
      .with_dtype<float>()
      .with_device<kDLCUDA>(device)
      .verify(x, "x")
      .verify(out, "out");
  RuntimeCheck(start >= 0 && count >= 0 && start + count <= length.unwrap(),
               "tile_copy: [start, start + count) must lie in a row");
  RuntimeCheck(group >= kTileThread && group <= kTileCta, "tile_copy: group must be 0, 1 or 2");
  const std::int64_t num_rows = rows.unwrap();
  unsigned grid = 1;
  std::int64_t block = num_rows;  // thread group: a thread per row
  if (group == kTileWarp) {
    block = num_rows * device::kWarpThreads;
    RuntimeCheck(n >= 0 && n <= 32, "tile_copy: a warp group has at most 32 lanes, got ", n);
  } else if (group == kTileCta) {
    grid = static_cast<unsigned>(num_rows);
    block = threads;
    RuntimeCheck(n >= 0 && n <= threads,
                 "tile_copy: a CTA group has at most ",
                 threads,
                 " threads, got ",
                 n);
  }
  RuntimeCheck(block >= 1 && block <= 1024, "tile_copy: ", block, " threads per CTA");
  LaunchKernel(grid, static_cast<unsigned>(block), device.unwrap())(tile_copy_kernel,
                                                                    data_of<float>(out),
                                                                    data_of<const float>(x),
                                                                    length.unwrap(),
                                                                    start,
                                                                    count,
                                                                    group,
                                                                    static_cast<std::uint32_t>(n));
}

// ---------------------------------------------------------------------------------- atomic.cuh

__global__ void atomic_max_kernel(
    float* result, float* olds, const float* values, std::int64_t per_group, std::int64_t total) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < total) olds[i] = device::atomic::max(&result[i / per_group], values[i]);
}

/// result[g] = max(result[g], values[g, :]) with one thread per value; olds[g, m] is what that
/// thread's atomic::max returned. float32; result [groups], olds and values [groups, m].
void atomic_max(TensorView result, TensorView olds, TensorView values) {
  auto groups = SymbolicSize{"groups"};
  auto per_group = SymbolicSize{"per_group"};
  auto device = SymbolicDevice{};
  TensorMatcher({groups}).with_dtype<float>().with_device<kDLCUDA>(device).verify(result, "result");
  TensorMatcher({groups, per_group})
      .with_dtype<float>()
      .with_device<kDLCUDA>(device)
      .verify(values, "values")
      .verify(olds, "olds");
  const std::int64_t total = values.numel();
  const auto grid = static_cast<unsigned>((total + 255) / 256);
  LaunchKernel(grid, 256, device.unwrap())(atomic_max_kernel,
                                           data_of<float>(result),
                                           data_of<float>(olds),
                                           data_of<const float>(values),
                                           per_group.unwrap(),
                                           total);
}

// ---------------------------------------------------------------------------------- signal.cuh
//
// A producer CTA and a consumer CTA on two streams. The helper handshakes use cuda::atomic_ref
// (not signal.cuh) and give up after a deadline, so a broken wait cannot hang the test: when the
// consumer has not acknowledged within it, the producer stores kRescue into the flag, which ends
// any wait that compares the flag with a target, and records that it had to.

enum SignalWord : int { kFlag = 0, kReady = 1, kAck = 2, kObserved = 3, kStatus = 4, kWords = 5 };
inline constexpr std::uint64_t kRescue = ~std::uint64_t{0};
inline constexpr std::uint64_t kNotReady = 1;  // status: the consumer did not start in time
inline constexpr std::uint64_t kRescued = 2;   // status: the consumer's wait did not return
inline constexpr std::uint64_t kDeadlineNs = 5'000'000'000;  // 5 s
inline constexpr unsigned kSignalThreads = 128;

using SystemWord = cuda::atomic_ref<std::uint64_t, cuda::thread_scope_system>;

__device__ std::uint64_t now_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/// Spins until `word` is non-zero or `timeout_ns` passed; returns whether it became non-zero.
__device__ bool await_nonzero(std::uint64_t* word, std::uint64_t timeout_ns) {
  const std::uint64_t begin = now_ns();
  while (SystemWord(*word).load(cuda::memory_order_acquire) == 0) {
    if (now_ns() - begin > timeout_ns) return false;
  }
  return true;
}

/// Waits for the consumer to start, writes data[i] = base + i, publishes `publish` into the flag
/// (0: publishes nothing), then waits for the consumer's acknowledgement (or rescues it).
__global__ void signal_producer_kernel(
    std::uint64_t* control, float* data, std::int64_t n, std::uint64_t publish, float base) {
  __shared__ bool ready;
  if (threadIdx.x == 0) {
    ready = await_nonzero(&control[kReady], kDeadlineNs);
    const std::uint64_t begin = now_ns();
    while (now_ns() - begin < 20'000) {  // 20 us for the consumer to enter its wait
    }
  }
  __syncthreads();
  if (publish != 0) {
    for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x)
      data[i] = base + static_cast<float>(i);
    __syncthreads();  // the CTA's writes come before the release (signal.cuh's contract)
    if (threadIdx.x == 0) device::signal::store_release_sys(&control[kFlag], publish);
  }
  if (threadIdx.x == 0) {
    std::uint64_t status = ready ? 0 : kNotReady;
    if (!await_nonzero(&control[kAck], kDeadlineNs)) {
      status |= kRescued;
      SystemWord(control[kFlag]).store(kRescue, cuda::memory_order_release);
    }
    SystemWord(control[kStatus]).store(status, cuda::memory_order_relaxed);
  }
}

/// Announces itself, waits until the flag reaches `target`, records the flag it then reads and
/// acknowledges; then the whole CTA copies data to out.
__global__ void signal_consumer_kernel(
    std::uint64_t* control, float* out, const float* data, std::int64_t n, std::uint64_t target) {
  if (threadIdx.x == 0) {
    SystemWord(control[kReady]).store(1, cuda::memory_order_release);
    device::signal::wait_at_least_sys(&control[kFlag], target);
    const std::uint64_t observed = device::signal::load_acquire_sys(&control[kFlag]);
    SystemWord(control[kObserved]).store(observed, cuda::memory_order_relaxed);
    SystemWord(control[kAck]).store(1, cuda::memory_order_release);
  }
  __syncthreads();  // the acquire orders the CTA's reads after it (signal.cuh's contract)
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) out[i] = data[i];
}

struct SignalArgs {
  std::uint64_t* control;
  std::int64_t n;
  DLDevice device;
};

SignalArgs check_signal_args(TensorView control,
                             TensorView data,
                             TensorView other,
                             const char* other_name) {
  auto n = SymbolicSize{"n"};
  auto device = SymbolicDevice{};
  TensorMatcher({kWords}).with_dtype<std::int64_t>().with_device<kDLCUDA>(device).verify(control,
                                                                                         "control");
  TensorMatcher({n})
      .with_dtype<float>()
      .with_device<kDLCUDA>(device)
      .verify(data, "data")
      .verify(other, other_name);
  return {data_of<std::uint64_t>(control), n.unwrap(), device.unwrap()};
}

/// Launches the producer (one CTA) on torch's current stream. control: int64 [5], zeroed but for
/// the flag; data: float32 [n].
void signal_produce(TensorView control, TensorView data, std::int64_t publish, double base) {
  const SignalArgs args = check_signal_args(control, data, data, "data");
  LaunchKernel(1, kSignalThreads, args.device)(signal_producer_kernel,
                                               args.control,
                                               data_of<float>(data),
                                               args.n,
                                               static_cast<std::uint64_t>(publish),
                                               static_cast<float>(base));
}

/// Launches the consumer (one CTA) on torch's current stream; out: float32 [n].
void signal_consume(TensorView control, TensorView out, TensorView data, std::int64_t target) {
  const SignalArgs args = check_signal_args(control, data, out, "out");
  LaunchKernel(1, kSignalThreads, args.device)(signal_consumer_kernel,
                                               args.control,
                                               data_of<float>(out),
                                               data_of<const float>(data),
                                               args.n,
                                               static_cast<std::uint64_t>(target));
}

/// Loads both signal kernels now. CUDA loads a kernel lazily at its first launch
/// (CUDA_MODULE_LOADING=LAZY, the default), and that load waits for the kernels already running:
/// a consumer launched for the first time while the producer spins waiting for it would never
/// start. Returns the CUDA error (0: cudaSuccess).
std::int64_t signal_load() {
  cudaFuncAttributes attributes{};
  cudaError_t error = cudaFuncGetAttributes(&attributes, signal_producer_kernel);
  if (error == cudaSuccess) error = cudaFuncGetAttributes(&attributes, signal_consumer_kernel);
  return static_cast<std::int64_t>(error);
}

// ------------------------------------------------------------------------------------- ipc.cuh
// Addresses travel to Python as int64; CUDA error codes come back as int64 (0: cudaSuccess).

std::int64_t ipc_allocate(std::int64_t device, std::int64_t bytes) {
  RuntimeCheck(bytes > 0, "ipc_allocate: bytes must be positive, got ", bytes);
  return reinterpret_cast<std::int64_t>(
      host::ipc::allocate_exportable(static_cast<int>(device), static_cast<std::size_t>(bytes)));
}

std::int64_t ipc_free(std::int64_t device, std::int64_t address) {
  return host::ipc::free_exportable(static_cast<int>(device), reinterpret_cast<void*>(address));
}

tvm::ffi::Bytes ipc_export(std::int64_t device, std::int64_t address) {
  const auto bytes =
      host::ipc::export_handle(static_cast<int>(device), reinterpret_cast<void*>(address));
  return tvm::ffi::Bytes(bytes.data(), bytes.size());
}

std::int64_t ipc_open(std::int64_t device, tvm::ffi::Bytes handle, tvm::ffi::String what) {
  RuntimeCheck(handle.size() == host::ipc::kHandleBytes,
               "ipc_open: a handle has ",
               host::ipc::kHandleBytes,
               " bytes, got ",
               handle.size());
  return reinterpret_cast<std::int64_t>(
      host::ipc::open_handle(static_cast<int>(device), handle.data(), what.c_str()));
}

std::int64_t ipc_close(std::int64_t device, std::int64_t address) {
  return host::ipc::close_handle(static_cast<int>(device), reinterpret_cast<void*>(address));
}

/// Whether `address` lies in device memory this process has allocated or mapped.
bool is_device_memory(std::int64_t address) {
  cudaPointerAttributes attributes{};
  const cudaError_t error =
      cudaPointerGetAttributes(&attributes, reinterpret_cast<const void*>(address));
  if (error == cudaErrorInvalidValue) {  // an address CUDA does not know at all
    static_cast<void>(cudaGetLastError());
    return false;
  }
  host::RuntimeDeviceCheck(error);
  return attributes.type == cudaMemoryTypeDevice;
}

/// out (a contiguous CUDA tensor) = the out.nbytes bytes at `address`; synchronous.
void copy_from_address(TensorView out, std::int64_t address) {
  RuntimeCheck(out.is_contiguous(), "copy_from_address: out must be contiguous");
  const auto bytes = static_cast<std::size_t>(out.numel()) * ((out.dtype().bits + 7) / 8);
  host::RuntimeDeviceCheck(cudaMemcpy(host::data_address(out),
                                      reinterpret_cast<const void*>(address),
                                      bytes,
                                      cudaMemcpyDeviceToDevice));
  host::RuntimeDeviceCheck(cudaDeviceSynchronize());
}

/// The src.nbytes bytes at `address` = src (a contiguous CUDA tensor); synchronous.
void copy_to_address(std::int64_t address, TensorView src) {
  RuntimeCheck(src.is_contiguous(), "copy_to_address: src must be contiguous");
  const auto bytes = static_cast<std::size_t>(src.numel()) * ((src.dtype().bits + 7) / 8);
  host::RuntimeDeviceCheck(cudaMemcpy(
      reinterpret_cast<void*>(address), host::data_address(src), bytes, cudaMemcpyDeviceToDevice));
  host::RuntimeDeviceCheck(cudaDeviceSynchronize());
}

}  // namespace
