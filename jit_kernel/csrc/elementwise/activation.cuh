// Gated activations: out = act(x[..., :d]) * x[..., d:] with act = silu, gelu (erf form) or gelu
// (tanh approximation), for fp16/bf16/fp32, computed in fp32 and rounded once.
#include <sgl_kernel/dtype_dispatch.h>  // For dispatch_dtype
#include <sgl_kernel/tensor.h>  // For TensorMatcher, SymbolicDevice, data_address, details::format_ints
#include <sgl_kernel/utils.h>      // For panic, DebugInfo, div_ceil, next_pow2
#include <sgl_kernel/vec_width.h>  // For widest_common_alignment, address_bits
#include <sgl_kernel/type.cuh>     // For device::cast, fp16_t, bf16_t, fp32_t
#include <sgl_kernel/utils.cuh>  // For LaunchKernel, SGL_DEVICE, PDLWaitPrimary, PDLTriggerSecondary
#include <sgl_kernel/vec.cuh>    // For AlignedVector

#include <dlpack/dlpack.h>
#include <tvm/ffi/container/tensor.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace {

/// The launch shape of the gated activations; the defaults ship. A block of kBlock threads
/// (block.x * block.y) strides over tiles (row group x chunk of a row); each thread loads
/// kUnroll (gate, up) vector pairs before it computes any. Calls of at most kDecodeMaxVectors
/// output vectors (decode batches: 16 x 11008, 64 x 4096 bf16) take the decode plan instead:
/// one vector per thread and no loop, the fewest instructions before the first load.
template <int kBlock_ = 128, int kUnroll_ = 4, int kDecodeMaxVectors_ = 1 << 15>
struct ActConfig {
  static constexpr int kBlock = kBlock_;
  static constexpr int kUnroll = kUnroll_;
  static constexpr std::int64_t kDecodeMaxVectors = kDecodeMaxVectors_;
  static_assert(kBlock >= 32 && kBlock <= 1024 && (kBlock & (kBlock - 1)) == 0,
                "ActConfig: kBlock must be a power of two in [32, 1024]");
  static_assert(kUnroll >= 1 && kUnroll <= 16, "ActConfig: kUnroll: 1..16");
};

/// silu(x) = x / (1 + exp(-x)) (torch.nn.functional.silu). kFast (fp16/bf16): __expf and
/// __fdividef (a few fp32 ulps; __fdividef(x, inf) = 0 keeps the x -> -inf limit, x -> +inf
/// gives x); fp32 keeps expf and an IEEE division.
struct SiluOp {
  template <bool kFast>
  static SGL_DEVICE float apply(float x) {
    if constexpr (kFast) {
      return __fdividef(x, 1.0f + __expf(-x));
    } else {
      return x / (1.0f + expf(-x));
    }
  }
};

/// gelu(x) = x / 2 * (1 + erf(x / sqrt(2))) (torch.nn.functional.gelu, approximate="none").
/// Always the accurate erff (there is no cheaper erf of the same accuracy).
struct GeluOp {
  template <bool kFast>
  static SGL_DEVICE float apply(float x) {
    constexpr float kSqrtHalf = 0.70710678118654752440f;
    return x * 0.5f * (1.0f + erff(x * kSqrtHalf));
  }
};

/// gelu_tanh(x) = x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))
/// (torch.nn.functional.gelu, approximate="tanh"). kFast uses the identity
/// (1 + tanh(z)) / 2 = 1 / (1 + exp(-2 z)), i.e. x / (1 + exp(-2 z)) with __expf and
/// __fdividef: no cancellation in 1 + tanh(z) for z << 0, a few fp32 ulps otherwise.
struct GeluTanhOp {
  template <bool kFast>
  static SGL_DEVICE float apply(float x) {
    constexpr float kBeta = 0.79788456080286535588f;  // sqrt(2 / pi)
    constexpr float kKappa = 0.044715f;
    const float cube = x * x * x;
    if constexpr (kFast) {
      return __fdividef(x, 1.0f + __expf(-2.0f * kBeta * (x + kKappa * cube)));
    } else {
      return 0.5f * x * (1.0f + tanhf(kBeta * (x + kKappa * cube)));
    }
  }
};

template <typename T>
struct ActParams {
  T* out;       // [rows, d]
  const T* in;  // [rows, 2 d]
  std::int64_t rows;
  std::int64_t d;             // elements
  std::int64_t row_groups;    // rows / blockDim.y, rounded up
  std::uint32_t row_vecs;     // vectors in d elements
  std::uint32_t chunks;       // chunks of blockDim.x * kUnroll vectors per row (tiles)
  std::uint32_t grid_groups;  // gridDim.x / chunks (tiles: a block's stride in row groups)
  std::uint32_t grid_chunks;  // gridDim.x % chunks (... and in chunks)
};

/// The kUnroll (gate, up) vector pairs of one thread in one chunk of a row: vectors
/// first, first + blockDim.x, ... (coalesced across the block row).
template <typename T, int kVecBytes, int kUnroll>
struct ActChunk {
  static constexpr int kVec = kVecBytes / static_cast<int>(sizeof(T));
  using vec_t = device::AlignedVector<T, kVec>;

  vec_t gate[kUnroll];
  vec_t up[kUnroll];

  /// Loads the pairs at vectors first + k * stride below row_vecs of the row at `gate_row`
  /// (its up half starts d elements later).
  SGL_DEVICE void load(const T* gate_row,
                       std::int64_t d,
                       std::uint32_t first,
                       std::uint32_t stride,
                       std::uint32_t row_vecs) {
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const std::uint32_t i = first + static_cast<std::uint32_t>(k) * stride;
      if (i < row_vecs) {
        gate[k].load(gate_row, i);
        up[k].load(gate_row + d, i);
      }
    }
  }

  /// Computes and stores the loaded pairs (the same vectors load() read) into `dst_row`.
  template <typename Op, bool kFast>
  SGL_DEVICE void compute_store(T* dst_row,
                                std::uint32_t first,
                                std::uint32_t stride,
                                std::uint32_t row_vecs) const {
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const std::uint32_t i = first + static_cast<std::uint32_t>(k) * stride;
      if (i < row_vecs) {
        vec_t o;
#pragma unroll
        for (int j = 0; j < kVec; ++j) {
          const float a = Op::template apply<kFast>(device::cast<fp32_t>(gate[k][j]));
          o[j] = device::cast<T>(a * device::cast<fp32_t>(up[k][j]));
        }
        o.store(dst_row, i);
      }
    }
  }
};

/// Block (tx, ty): blockDim.y rows side by side, blockDim.x threads along a row. A chunk of a
/// row is blockDim.x * kUnroll vectors; thread tx owns vectors tx, tx + blockDim.x, ... of it
/// (all its kUnroll pairs are loaded before any is used). Blocks stride over tiles (row group,
/// chunk), t = group * chunks + chunk. 64-bit row offsets; vector indices within a row are
/// 32-bit (row_vecs < 2^31).
template <typename T, typename Op, int kVecBytes, int kBlock, int kUnroll, bool kUsePDL>
__global__ void __launch_bounds__(kBlock) act_and_mul_kernel(const ActParams<T> p) {
  using Chunk = ActChunk<T, kVecBytes, kUnroll>;
  constexpr bool kFast = sizeof(T) == 2;
  const std::uint32_t stride = blockDim.x;
  const std::uint32_t step = blockDim.x * kUnroll;

  device::PDLWaitPrimary<kUsePDL>();  // the input may come from the previous kernel

  // Tile t = blockIdx.x + n * gridDim.x as (row group, chunk), advanced without divisions.
  std::int64_t group = blockIdx.x / p.chunks;
  std::uint32_t chunk_index = blockIdx.x % p.chunks;
  const std::uint32_t chunks = p.chunks;
  const std::uint32_t grid_groups = p.grid_groups;
  const std::uint32_t grid_chunks = p.grid_chunks;
  const auto advance = [chunks, grid_groups, grid_chunks](std::int64_t& g, std::uint32_t& c) {
    g += grid_groups;
    c += grid_chunks;  // both < chunks < 2^31: no overflow
    if (c >= chunks) {
      c -= chunks;
      ++g;
    }
  };
  for (; group < p.row_groups; advance(group, chunk_index)) {
    const std::int64_t row = group * blockDim.y + threadIdx.y;
    if (row < p.rows) {
      const std::uint32_t first = chunk_index * step + threadIdx.x;
      Chunk chunk;
      chunk.load(p.in + row * 2 * p.d, p.d, first, stride, p.row_vecs);
      chunk.template compute_store<Op, kFast>(p.out + row * p.d, first, stride, p.row_vecs);
    }
  }

  device::PDLTriggerSecondary<kUsePDL>();
}

/// The decode plan: thread (x, y) of block (bx, by) computes output vector bx * blockDim.x + x
/// of row by * blockDim.y + y, and nothing else (the grid covers every vector once).
template <typename T, typename Op, int kVecBytes, bool kUsePDL>
__global__ void act_and_mul_decode_kernel(const ActParams<T> p) {
  using vec_t = typename ActChunk<T, kVecBytes, 1>::vec_t;
  constexpr bool kFast = sizeof(T) == 2;
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  const std::uint32_t row = blockIdx.y * blockDim.y + threadIdx.y;  // rows < 2^31 (the caller)
  if (i >= p.row_vecs || row >= p.rows) return;

  device::PDLWaitPrimary<kUsePDL>();  // the input may come from the previous kernel
  const T* gate_row = p.in + static_cast<std::int64_t>(row) * 2 * p.d;
  vec_t gate, up, o;
  gate.load(gate_row, i);
  up.load(gate_row + p.d, i);
  device::PDLTriggerSecondary<kUsePDL>();  // the next kernel's wait still waits for the stores
#pragma unroll
  for (int j = 0; j < static_cast<int>(vec_t::kSize); ++j) {
    const float a = Op::template apply<kFast>(device::cast<fp32_t>(gate[j]));
    o[j] = device::cast<T>(a * device::cast<fp32_t>(up[j]));
  }
  o.store(p.out + static_cast<std::int64_t>(row) * p.d, i);
}

/// Threads along a row for rows of `row_vecs` vectors, each doing about `per_thread` of them:
/// a power of two, at most a whole block of kBlock.
template <int kBlock>
std::uint32_t threads_along(std::uint32_t row_vecs, std::uint32_t per_thread) {
  return static_cast<std::uint32_t>(
      std::min<std::int64_t>(kBlock, host::next_pow2(host::div_ceil(row_vecs, per_thread))));
}

template <typename T, typename Op, int kVecBytes, typename Config, bool kUsePDL>
void launch_act_and_mul(ActParams<T> params, DLDevice device) {
  using namespace host;
  constexpr int kBlock = Config::kBlock;
  constexpr int kUnroll = Config::kUnroll;
  if (params.rows * params.row_vecs <= Config::kDecodeMaxVectors) {
    const std::uint32_t along = threads_along<kBlock>(params.row_vecs, 1);
    const std::uint32_t across = kBlock / along;
    const dim3 grid(div_ceil(params.row_vecs, along),
                    static_cast<std::uint32_t>(div_ceil(params.rows, std::int64_t{across})));
    LaunchKernel(grid, dim3(along, across), device)
        .enable_pdl(kUsePDL)(act_and_mul_decode_kernel<T, Op, kVecBytes, kUsePDL>, params);
    return;
  }
  constexpr auto kernel = act_and_mul_kernel<T, Op, kVecBytes, kBlock, kUnroll, kUsePDL>;
  // Enough threads along a row that each does about kUnroll vectors, at most a whole block.
  const std::uint32_t along = threads_along<kBlock>(params.row_vecs, kUnroll);
  const std::uint32_t across = kBlock / along;
  params.row_groups = div_ceil(params.rows, static_cast<std::int64_t>(across));
  params.chunks = static_cast<std::uint32_t>(
      div_ceil(static_cast<std::int64_t>(params.row_vecs), std::int64_t{along} * kUnroll));
  // One block per tile (row group x chunk); beyond 2^31 - 1 tiles the blocks stride.
  const std::int64_t grid = std::max<std::int64_t>(
      1, std::min<std::int64_t>(params.row_groups * params.chunks, 0x7fffffff));
  params.grid_groups = static_cast<std::uint32_t>(grid) / params.chunks;
  params.grid_chunks = static_cast<std::uint32_t>(grid) % params.chunks;
  LaunchKernel(static_cast<unsigned>(grid), dim3(along, across), device)
      .enable_pdl(kUsePDL)(kernel, params);
}

/// out = Op(input[..., :d]) * input[..., d:]. input: contiguous, any rank >= 1, last dim 2 d;
/// out: contiguous, input's shape with d as the last dim; dtype T, one CUDA device. Errors name
/// `op_name` (`location`, the caller's, gives TensorMatcher's messages the same name).
template <typename T, typename Op, typename Config, bool kUsePDL>
void act_and_mul(tvm::ffi::TensorView out,
                 tvm::ffi::TensorView input,
                 const char* op_name,
                 host::DebugInfo location) {
  using namespace host;
  auto device = SymbolicDevice{};
  TensorMatcher(input.shape())  //
      .with_device<kDLCUDA>(device)
      .with_dtype<T>()
      .verify(input, "input", location);
  if (input.ndim() < 1 || input.size(-1) % 2 != 0) {
    panic(DebugInfo{},
          op_name,
          ": tensor 'input' must have an even last dim (2 * d) but has shape ",
          details::format_ints(input.shape()));
  }
  std::vector<std::int64_t> out_shape(input.shape().begin(), input.shape().end());
  out_shape.back() /= 2;
  TensorMatcher(tvm::ffi::ShapeView(out_shape.data(), out_shape.size()))  //
      .with_device<kDLCUDA>(device)
      .with_dtype<T>()
      .verify(out, "out", location);

  const std::int64_t d = out_shape.back();
  const std::int64_t rows = d == 0 ? 0 : out.numel() / d;
  if (rows == 0) return;
  constexpr std::int64_t kElem = sizeof(T);
  // Rows are contiguous, so aligned row starts follow from the base addresses and d's bytes.
  const std::int64_t vec_bytes = widest_common_alignment(
      16, {address_bits(data_address(out)), address_bits(data_address(input)), d * kElem});
  const std::int64_t row_vecs = d * kElem / vec_bytes;
  if (row_vecs >= (std::int64_t{1} << 31)) {
    panic(DebugInfo{}, op_name, ": d = ", d, " elements per row is too large");
  }
  ActParams<T> params{};
  params.out = static_cast<T*>(data_address(out));
  params.in = static_cast<const T*>(data_address(input));
  params.rows = rows;
  params.d = d;
  params.row_vecs = static_cast<std::uint32_t>(row_vecs);
  const DLDevice dev = device.unwrap();
  switch (vec_bytes) {
    case 16:
      return launch_act_and_mul<T, Op, 16, Config, kUsePDL>(params, dev);
    case 8:
      return launch_act_and_mul<T, Op, 8, Config, kUsePDL>(params, dev);
    case 4:
      if constexpr (sizeof(T) <= 4)
        return launch_act_and_mul<T, Op, 4, Config, kUsePDL>(params, dev);
      break;
    case 2:
      if constexpr (sizeof(T) <= 2)
        return launch_act_and_mul<T, Op, 2, Config, kUsePDL>(params, dev);
      break;
    default:
      break;
  }
  panic(DebugInfo{}, op_name, ": internal error: vector width ", vec_bytes);
}

template <typename T, bool kUsePDL, typename Config = ActConfig<>>
void silu_and_mul(tvm::ffi::TensorView out, tvm::ffi::TensorView input) {
  act_and_mul<T, SiluOp, Config, kUsePDL>(out, input, "silu_and_mul", host::DebugInfo{});
}

template <typename T, bool kUsePDL, typename Config = ActConfig<>>
void gelu_and_mul(tvm::ffi::TensorView out, tvm::ffi::TensorView input) {
  act_and_mul<T, GeluOp, Config, kUsePDL>(out, input, "gelu_and_mul", host::DebugInfo{});
}

template <typename T, bool kUsePDL, typename Config = ActConfig<>>
void gelu_tanh_and_mul(tvm::ffi::TensorView out, tvm::ffi::TensorView input) {
  act_and_mul<T, GeluTanhOp, Config, kUsePDL>(out, input, "gelu_tanh_and_mul", host::DebugInfo{});
}

// The module's exports: each activation for input's dtype (fp16, bf16, fp32).
template <bool kUsePDL, typename Config = ActConfig<>>
void silu_and_mul_by_dtype(tvm::ffi::TensorView out, tvm::ffi::TensorView input) {
  host::dispatch_dtype<fp16_t, bf16_t, fp32_t>(
      input.dtype(), "silu_and_mul", "input", [&]<typename T>() {
        silu_and_mul<T, kUsePDL, Config>(out, input);
      });
}

template <bool kUsePDL, typename Config = ActConfig<>>
void gelu_and_mul_by_dtype(tvm::ffi::TensorView out, tvm::ffi::TensorView input) {
  host::dispatch_dtype<fp16_t, bf16_t, fp32_t>(
      input.dtype(), "gelu_and_mul", "input", [&]<typename T>() {
        gelu_and_mul<T, kUsePDL, Config>(out, input);
      });
}

template <bool kUsePDL, typename Config = ActConfig<>>
void gelu_tanh_and_mul_by_dtype(tvm::ffi::TensorView out, tvm::ffi::TensorView input) {
  host::dispatch_dtype<fp16_t, bf16_t, fp32_t>(
      input.dtype(), "gelu_tanh_and_mul", "input", [&]<typename T>() {
        gelu_tanh_and_mul<T, kUsePDL, Config>(out, input);
      });
}

}  // namespace
