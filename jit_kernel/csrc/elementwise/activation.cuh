// Gated activations: out = act(x[..., :d]) * x[..., d:] with act = silu, gelu (erf form) or gelu
// (tanh approximation), for fp16/bf16/fp32, computed in fp32 and rounded once.
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

namespace {

inline constexpr int kActBlock = 256;  // threads per block (kActBlock = block.x * block.y)
inline constexpr int kActUnroll = 2;   // vector pairs (gate, up) in flight per thread

/// silu(x) = x / (1 + exp(-x)) (torch.nn.functional.silu).
struct SiluOp {
  static SGL_DEVICE float apply(float x) { return x / (1.0f + expf(-x)); }
};

/// gelu(x) = x / 2 * (1 + erf(x / sqrt(2))) (torch.nn.functional.gelu, approximate="none").
struct GeluOp {
  static SGL_DEVICE float apply(float x) {
    constexpr float kSqrtHalf = 0.70710678118654752440f;
    return x * 0.5f * (1.0f + erff(x * kSqrtHalf));
  }
};

/// gelu_tanh(x) = x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))
/// (torch.nn.functional.gelu, approximate="tanh").
struct GeluTanhOp {
  static SGL_DEVICE float apply(float x) {
    constexpr float kBeta = 0.79788456080286535588f;  // sqrt(2 / pi)
    constexpr float kKappa = 0.044715f;
    const float cube = x * x * x;
    return 0.5f * x * (1.0f + tanhf(kBeta * (x + kKappa * cube)));
  }
};

template <typename T>
struct ActParams {
  T* out;       // [rows, d]
  const T* in;  // [rows, 2 d]
  std::int64_t rows;
  std::int64_t d;          // elements
  std::uint32_t row_vecs;  // vectors in d elements
};

/// Block (tx, ty): blockDim.y rows side by side, blockDim.x threads along a row (vectors tx,
/// tx + blockDim.x, ...; kActUnroll gate/up pairs loaded before any is used). Blocks stride
/// over groups of blockDim.y rows.
template <typename T, typename Op, int kVecBytes, bool kUsePDL>
__global__ void __launch_bounds__(kActBlock) act_and_mul_kernel(const ActParams<T> p) {
  constexpr int kVec = kVecBytes / static_cast<int>(sizeof(T));
  using vec_t = device::AlignedVector<T, kVec>;
  const std::uint32_t step = blockDim.x * kActUnroll;

  device::PDLWaitPrimary<kUsePDL>();  // the input may come from the previous kernel

  for (std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
       row < p.rows;
       row += static_cast<std::int64_t>(gridDim.x) * blockDim.y) {
    const T* gate = p.in + row * 2 * p.d;
    const T* up = gate + p.d;
    T* dst = p.out + row * p.d;
    for (std::uint32_t first = threadIdx.x; first < p.row_vecs; first += step) {
      vec_t g[kActUnroll];
      vec_t u[kActUnroll];
#pragma unroll
      for (int k = 0; k < kActUnroll; ++k) {
        const std::uint32_t i = first + k * blockDim.x;
        if (i < p.row_vecs) {
          g[k].load(gate, i);
          u[k].load(up, i);
        }
      }
#pragma unroll
      for (int k = 0; k < kActUnroll; ++k) {
        const std::uint32_t i = first + k * blockDim.x;
        if (i < p.row_vecs) {
          vec_t o;
#pragma unroll
          for (int j = 0; j < kVec; ++j) {
            const float a = Op::apply(device::cast<fp32_t>(g[k][j]));
            o[j] = device::cast<T>(a * device::cast<fp32_t>(u[k][j]));
          }
          o.store(dst, i);
        }
      }
    }
  }

  device::PDLTriggerSecondary<kUsePDL>();
}

template <typename T, typename Op, int kVecBytes, bool kUsePDL>
void launch_act_and_mul(const ActParams<T>& params, DLDevice device) {
  using namespace host;
  constexpr auto kernel = act_and_mul_kernel<T, Op, kVecBytes, kUsePDL>;
  // Enough threads along a row that each does about kActUnroll vectors, at most a whole block.
  const auto along = static_cast<std::uint32_t>(
      std::min<std::int64_t>(kActBlock, next_pow2(div_ceil(params.row_vecs, kActUnroll))));
  const std::uint32_t across = kActBlock / along;
  const std::int64_t wanted = div_ceil(params.rows, static_cast<std::int64_t>(across));
  const std::int64_t resident = static_cast<std::int64_t>(runtime::get_sm_count(device.device_id)) *
                                runtime::get_blocks_per_sm(kernel, kActBlock, 0, device.device_id);
  const auto grid = std::max<std::int64_t>(1, std::min(wanted, resident));
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

}  // namespace
