// Gated activations: out = act(x[..., :d]) * x[..., d:] with act = silu, gelu (erf form) or gelu
// (tanh approximation), for fp16/bf16/fp32, computed in fp32 and rounded once.
#include <sgl_kernel/dtype_dispatch.h>  // For dispatch_dtype
#include <sgl_kernel/tensor.h>  // For TensorMatcher, SymbolicDevice, data_address, details::format_ints
#include <sgl_kernel/utils.h>      // For panic, DebugInfo, div_ceil, next_pow2
#include <sgl_kernel/vec_width.h>  // For widest_common_alignment, address_bits
#include <sgl_kernel/runtime.cuh>  // For runtime::get_sm_count, runtime::get_blocks_per_sm
#include <sgl_kernel/type.cuh>     // For device::cast, fp16_t, bf16_t, fp32_t
#include <sgl_kernel/utils.cuh>  // For LaunchKernel, SGL_DEVICE, PDLWaitPrimary, PDLTriggerSecondary
#include <sgl_kernel/vec.cuh>    // For AlignedVector

#include <dlpack/dlpack.h>
#include <tvm/ffi/container/tensor.h>

#include <algorithm>
#include <cstdint>
#include <vector>

// Tuning knobs (compile-time; scripts/tune_kernels.py sweeps them, scripts/tune_kernels.md):
//   SGL_ACT_BLOCK       threads per block (a power of two, 32..1024)
//   SGL_ACT_UNROLL      (gate, up) vector pairs loaded per thread before any is used (1..16)
//   SGL_ACT_PERSISTENT  1: at most one wave of resident blocks, striding over the work;
//                       0: one block per unit of work (row group or tile), grid = work units
//   SGL_ACT_FAST_MATH   1: fp16/bf16 use __expf and __fdividef (silu, and gelu_tanh in its
//                       equivalent form x / (1 + exp(-2 z))); fp32 always uses expf and an
//                       IEEE division. gelu (erf) is unaffected.
//   SGL_ACT_SCHEDULE    0: a block row walks whole rows (chunks of one row in order);
//                       1: blocks stride over tiles (row group x chunk of blockDim.x * UNROLL
//                       vectors); 2: as 1, with the next tile's loads issued before the
//                       current tile is computed (software prefetch)
//   SGL_ACT_MIN_BLOCKS  0: no register cap; N > 0: __launch_bounds__ asks for N resident
//                       blocks per SM (caps registers at 65536 / (N * SGL_ACT_BLOCK))
//   SGL_ACT_PDL_EARLY   1: with PDL, let the next kernel launch as soon as this block starts
//                       (after its griddepcontrol.wait) rather than when it ends; the next
//                       kernel still waits for this grid to finish before touching memory
#ifndef SGL_ACT_BLOCK
#define SGL_ACT_BLOCK 128
#endif
#ifndef SGL_ACT_UNROLL
#define SGL_ACT_UNROLL 4
#endif
#ifndef SGL_ACT_PERSISTENT
#define SGL_ACT_PERSISTENT 0
#endif
#ifndef SGL_ACT_FAST_MATH
#define SGL_ACT_FAST_MATH 1
#endif
#ifndef SGL_ACT_SCHEDULE
#define SGL_ACT_SCHEDULE 1
#endif
#ifndef SGL_ACT_MIN_BLOCKS
#define SGL_ACT_MIN_BLOCKS 0
#endif
#ifndef SGL_ACT_PDL_EARLY
#define SGL_ACT_PDL_EARLY 0
#endif

#if SGL_ACT_MIN_BLOCKS > 0
#define SGL_ACT_LAUNCH_BOUNDS __launch_bounds__(SGL_ACT_BLOCK, SGL_ACT_MIN_BLOCKS)
#else
#define SGL_ACT_LAUNCH_BOUNDS __launch_bounds__(SGL_ACT_BLOCK)
#endif

namespace {

inline constexpr int kActBlock = SGL_ACT_BLOCK;    // threads per block (block.x * block.y)
inline constexpr int kActUnroll = SGL_ACT_UNROLL;  // vector pairs (gate, up) in flight per thread
inline constexpr bool kActPersistent = SGL_ACT_PERSISTENT != 0;
inline constexpr bool kActFastMath = SGL_ACT_FAST_MATH != 0;
inline constexpr int kActSchedule = SGL_ACT_SCHEDULE;
inline constexpr int kActMinBlocks = SGL_ACT_MIN_BLOCKS;
inline constexpr bool kActPDLEarly = SGL_ACT_PDL_EARLY != 0;
static_assert(kActBlock >= 32 && kActBlock <= 1024 && (kActBlock & (kActBlock - 1)) == 0,
              "SGL_ACT_BLOCK must be a power of two in [32, 1024]");
static_assert(kActUnroll >= 1 && kActUnroll <= 16, "SGL_ACT_UNROLL must be in [1, 16]");
static_assert(kActSchedule >= 0 && kActSchedule <= 2, "SGL_ACT_SCHEDULE must be 0, 1 or 2");
static_assert(kActMinBlocks >= 0 && kActMinBlocks * kActBlock <= 2048,
              "SGL_ACT_MIN_BLOCKS * SGL_ACT_BLOCK must be at most 2048 threads per SM");

/// silu(x) = x / (1 + exp(-x)) (torch.nn.functional.silu). kFast: __expf and __fdividef (a few
/// fp32 ulps; __fdividef(x, inf) = 0 keeps the x -> -inf limit, x -> +inf gives x).
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
  std::uint32_t chunks;       // chunks of blockDim.x * kActUnroll vectors per row (tiles)
  std::uint32_t grid_groups;  // gridDim.x / chunks (tiles: a block's stride in row groups)
  std::uint32_t grid_chunks;  // gridDim.x % chunks (... and in chunks)
};

/// The kActUnroll (gate, up) vector pairs of one thread in one chunk of a row: vectors
/// first, first + blockDim.x, ... (coalesced across the block row).
template <typename T, int kVecBytes>
struct ActChunk {
  static constexpr int kVec = kVecBytes / static_cast<int>(sizeof(T));
  using vec_t = device::AlignedVector<T, kVec>;

  vec_t gate[kActUnroll];
  vec_t up[kActUnroll];

  /// Loads the pairs at vectors first + k * stride below row_vecs of the row at `gate_row`
  /// (its up half starts d elements later).
  SGL_DEVICE void load(const T* gate_row,
                       std::int64_t d,
                       std::uint32_t first,
                       std::uint32_t stride,
                       std::uint32_t row_vecs) {
#pragma unroll
    for (int k = 0; k < kActUnroll; ++k) {
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
    for (int k = 0; k < kActUnroll; ++k) {
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
/// row is blockDim.x * kActUnroll vectors; thread tx owns vectors tx, tx + blockDim.x, ... of it
/// (all its kActUnroll pairs are loaded before any is used).
///   kActSchedule 0: blocks stride over row groups (blockDim.y rows); a block row walks the
///                   chunks of its row in order.
///   kActSchedule 1: blocks stride over tiles (row group, chunk), t = group * chunks + chunk.
///   kActSchedule 2: as 1, and the next tile's pairs are loaded before this tile is computed.
/// 64-bit row offsets; vector indices within a row are 32-bit (row_vecs < 2^31).
template <typename T, typename Op, int kVecBytes, bool kUsePDL>
__global__ void SGL_ACT_LAUNCH_BOUNDS act_and_mul_kernel(const ActParams<T> p) {
  using Chunk = ActChunk<T, kVecBytes>;
  constexpr bool kFast = kActFastMath && sizeof(T) == 2;
  const std::uint32_t stride = blockDim.x;
  const std::uint32_t step = blockDim.x * kActUnroll;

  device::PDLWaitPrimary<kUsePDL>();  // the input may come from the previous kernel
  if constexpr (kActPDLEarly) device::PDLTriggerSecondary<kUsePDL>();

  if constexpr (kActSchedule == 0) {
    for (std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
         row < p.rows;
         row += static_cast<std::int64_t>(gridDim.x) * blockDim.y) {
      const T* gate = p.in + row * 2 * p.d;
      T* dst = p.out + row * p.d;
      for (std::uint32_t first = threadIdx.x; first < p.row_vecs; first += step) {
        Chunk chunk;
        chunk.load(gate, p.d, first, stride, p.row_vecs);
        chunk.template compute_store<Op, kFast>(dst, first, stride, p.row_vecs);
      }
    }
  } else {
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
    if constexpr (kActSchedule == 1) {
      for (; group < p.row_groups; advance(group, chunk_index)) {
        const std::int64_t row = group * blockDim.y + threadIdx.y;
        if (row < p.rows) {
          const std::uint32_t first = chunk_index * step + threadIdx.x;
          Chunk chunk;
          chunk.load(p.in + row * 2 * p.d, p.d, first, stride, p.row_vecs);
          chunk.template compute_store<Op, kFast>(p.out + row * p.d, first, stride, p.row_vecs);
        }
      }
    } else {
      Chunk current;
      if (group < p.row_groups) {
        const std::int64_t row = group * blockDim.y + threadIdx.y;
        if (row < p.rows) {
          current.load(
              p.in + row * 2 * p.d, p.d, chunk_index * step + threadIdx.x, stride, p.row_vecs);
        }
      }
      while (group < p.row_groups) {
        std::int64_t next_group = group;
        std::uint32_t next_chunk = chunk_index;
        advance(next_group, next_chunk);
        Chunk next;
        if (next_group < p.row_groups) {
          const std::int64_t row = next_group * blockDim.y + threadIdx.y;
          if (row < p.rows) {
            next.load(
                p.in + row * 2 * p.d, p.d, next_chunk * step + threadIdx.x, stride, p.row_vecs);
          }
        }
        const std::int64_t row = group * blockDim.y + threadIdx.y;
        if (row < p.rows) {
          current.template compute_store<Op, kFast>(
              p.out + row * p.d, chunk_index * step + threadIdx.x, stride, p.row_vecs);
        }
        current = next;
        group = next_group;
        chunk_index = next_chunk;
      }
    }
  }

  if constexpr (!kActPDLEarly) device::PDLTriggerSecondary<kUsePDL>();
}

template <typename T, typename Op, int kVecBytes, bool kUsePDL>
void launch_act_and_mul(ActParams<T> params, DLDevice device) {
  using namespace host;
  constexpr auto kernel = act_and_mul_kernel<T, Op, kVecBytes, kUsePDL>;
  // Enough threads along a row that each does about kActUnroll vectors, at most a whole block.
  const auto along = static_cast<std::uint32_t>(
      std::min<std::int64_t>(kActBlock, next_pow2(div_ceil(params.row_vecs, kActUnroll))));
  const std::uint32_t across = kActBlock / along;
  params.row_groups = div_ceil(params.rows, static_cast<std::int64_t>(across));
  params.chunks = static_cast<std::uint32_t>(
      div_ceil(static_cast<std::int64_t>(params.row_vecs), std::int64_t{along} * kActUnroll));
  // Units of work: row groups (schedule 0) or tiles (row group x chunk).
  const std::int64_t wanted =
      kActSchedule == 0 ? params.row_groups : params.row_groups * params.chunks;
  std::int64_t grid = std::min<std::int64_t>(wanted, 0x7fffffff);
  if constexpr (kActPersistent) {
    const std::int64_t resident =
        static_cast<std::int64_t>(runtime::get_sm_count(device.device_id)) *
        runtime::get_blocks_per_sm(kernel, kActBlock, 0, device.device_id);
    grid = std::min(grid, resident);
  }
  grid = std::max<std::int64_t>(1, grid);
  params.grid_groups = static_cast<std::uint32_t>(grid) / params.chunks;
  params.grid_chunks = static_cast<std::uint32_t>(grid) % params.chunks;
  LaunchKernel(static_cast<unsigned>(grid), dim3(along, across), device)
      .enable_pdl(kUsePDL)(kernel, params);
}

/// out = Op(input[..., :d]) * input[..., d:]. input: contiguous, any rank >= 1, last dim 2 d;
/// out: contiguous, input's shape with d as the last dim; dtype T, one CUDA device. Errors name
/// `op_name` (`location`, the caller's, gives TensorMatcher's messages the same name).
template <typename T, typename Op, bool kUsePDL>
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
      return launch_act_and_mul<T, Op, 16, kUsePDL>(params, dev);
    case 8:
      return launch_act_and_mul<T, Op, 8, kUsePDL>(params, dev);
    case 4:
      if constexpr (sizeof(T) <= 4) return launch_act_and_mul<T, Op, 4, kUsePDL>(params, dev);
      break;
    case 2:
      if constexpr (sizeof(T) <= 2) return launch_act_and_mul<T, Op, 2, kUsePDL>(params, dev);
      break;
    default:
      break;
  }
  panic(DebugInfo{}, op_name, ": internal error: vector width ", vec_bytes);
}

template <typename T, bool kUsePDL>
void silu_and_mul(tvm::ffi::TensorView out, tvm::ffi::TensorView input) {
  act_and_mul<T, SiluOp, kUsePDL>(out, input, "silu_and_mul", host::DebugInfo{});
}

template <typename T, bool kUsePDL>
void gelu_and_mul(tvm::ffi::TensorView out, tvm::ffi::TensorView input) {
  act_and_mul<T, GeluOp, kUsePDL>(out, input, "gelu_and_mul", host::DebugInfo{});
}

template <typename T, bool kUsePDL>
void gelu_tanh_and_mul(tvm::ffi::TensorView out, tvm::ffi::TensorView input) {
  act_and_mul<T, GeluTanhOp, kUsePDL>(out, input, "gelu_tanh_and_mul", host::DebugInfo{});
}

// The module's exports: each activation for input's dtype (fp16, bf16, fp32).
template <bool kUsePDL>
void silu_and_mul_by_dtype(tvm::ffi::TensorView out, tvm::ffi::TensorView input) {
  host::dispatch_dtype<fp16_t, bf16_t, fp32_t>(
      input.dtype(), "silu_and_mul", "input", [&]<typename T>() {
        silu_and_mul<T, kUsePDL>(out, input);
      });
}

template <bool kUsePDL>
void gelu_and_mul_by_dtype(tvm::ffi::TensorView out, tvm::ffi::TensorView input) {
  host::dispatch_dtype<fp16_t, bf16_t, fp32_t>(
      input.dtype(), "gelu_and_mul", "input", [&]<typename T>() {
        gelu_and_mul<T, kUsePDL>(out, input);
      });
}

template <bool kUsePDL>
void gelu_tanh_and_mul_by_dtype(tvm::ffi::TensorView out, tvm::ffi::TensorView input) {
  host::dispatch_dtype<fp16_t, bf16_t, fp32_t>(
      input.dtype(), "gelu_tanh_and_mul", "input", [&]<typename T>() {
        gelu_tanh_and_mul<T, kUsePDL>(out, input);
      });
}

}  // namespace
