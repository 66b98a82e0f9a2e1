// rmsnorm: out[i, :] = input[i, :] * rsqrt(mean(input[i, :]^2) + eps) * weight, fp16/bf16, fp32
// math. Rows of any stride; every row size (8..16384, multiple of 8) dispatched in C++.
#include <sgl_kernel/dtype_dispatch.h>  // For dispatch_dtype
#include <sgl_kernel/tensor.h>  // For TensorMatcher, SymbolicSize, SymbolicDevice, data_address
#include <sgl_kernel/utils.h>   // For RuntimeCheck, div_ceil
#include <sgl_kernel/impl/norm.cuh>  // For norm::RowSlice, row_sum, dispatch_rows, WarpSums
#include <sgl_kernel/utils.cuh>      // For LaunchKernel, PDLWaitPrimary, PDLTriggerSecondary

#include <dlpack/dlpack.h>
#include <tvm/ffi/container/tensor.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace {

/// The fields rmsnorm_decode_kernel reads come first and end by byte kDecodeParamBytes: one
/// placed after it was read only after the PDL wait, on every call's critical path
/// (docs/kernels/norm.md, "Decode plan").
template <typename T>
struct RMSNormParams {
  float inv_dim;  // 1 / D
  float eps;
  T* out;
  const T* input;
  const T* weight;
  std::int64_t out_stride;    // elements between rows
  std::int64_t input_stride;  // elements between rows
  std::int64_t num_rows;
  std::uint32_t num_packs;  // 16-byte packs per row (D / 8)
};
inline constexpr std::size_t kDecodeParamBytes = 48;
static_assert(offsetof(RMSNormParams<fp16_t>, input_stride) + sizeof(std::int64_t) <=
                  kDecodeParamBytes,
              "RMSNormParams: the decode kernel's fields must end by byte 48");

/// Rows are split among groups of kGroup lanes (0: the whole CTA); each thread keeps kPacks
/// packs of its row in registers: one read, fp32 reduction, one write. Each group takes kRows
/// rows per iteration (rows base + r * groups + group, r < kRows), all loaded before the first
/// reduction. The loop over rows is uniform across the CTA (every lane reaches every shuffle /
/// barrier).
template <std::uint32_t kGroup,
          int kPacks,
          int kRows,
          std::uint32_t kWarpThreads,
          bool kUsePDL,
          typename T>
__global__ void __launch_bounds__(host::norm::max_threads(kGroup, kWarpThreads),
                                  host::norm::min_blocks(kGroup, kPacks, kRows, 1, kWarpThreads))
    rmsnorm_kernel(const RMSNormParams<T> p) {
  using namespace device::norm;
  using Rows = RowGroups<kGroup>;
  using Slice = RowSlice<T, kPacks>;
  static_assert(kRows >= 1 && (kRows == 1 || kGroup != 0), "several rows: warp groups only");
  __shared__ CtaSumScratch scratch;
  extern __shared__ __align__(16) unsigned char norm_smem[];  // staged weight: kPacks x blockDim
  Pack* const weight_slots = reinterpret_cast<Pack*>(norm_smem) + threadIdx.x;

  device::PDLWaitPrimaryTriggerSecondary<kUsePDL>();

  const std::uint32_t rank = Rows::rank();
  const std::uint32_t step = Rows::size();
  // Every row this thread touches uses the same weight packs (registers, loaded with each batch
  // of rows, or shared-memory slots staged once: see RowWeight).
  RowWeight<T, kPacks, kWeightInRegisters<kGroup>> weight;
  weight.stage(p.weight, rank, step, p.num_packs, weight_slots, blockDim.x);

  const std::int64_t groups = Rows::per_cta();
  const std::int64_t rows_per_cta = groups * kRows;
  const std::int64_t row_step = static_cast<std::int64_t>(gridDim.x) * rows_per_cta;
  std::uint32_t call = 0;
  for (std::int64_t base = blockIdx.x * rows_per_cta; base < p.num_rows; base += row_step) {
    Slice x[kRows];
    std::int64_t safe_row[kRows];
    std::uint32_t packs[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const std::int64_t row = base + r * groups + Rows::index();
      const bool valid = row < p.num_rows;
      safe_row[r] = valid ? row : 0;
      packs[r] = valid ? p.num_packs : 0u;
      x[r].load_unguarded(p.input + safe_row[r] * p.input_stride, rank, step, packs[r]);
    }
    weight.load(p.weight, rank, step, p.num_packs);
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const float sum = row_sum<kGroup>(x[r].sum_squares(), scratch, call++);
      if (r == 0) weight.ready(weight_slots, blockDim.x);
      x[r].scale(weight.slice, rms_scale(sum, p.inv_dim, p.eps));
      x[r].store(p.out + safe_row[r] * p.out_stride, rank, step, packs[r]);
    }
  }
}

/// The decode plan (few rows): CTA b normalises row b, thread t holding packs t, t + blockDim.x,
/// ... (kPacks of them; kAllInside: the CTA covers the row exactly, no checks). No row loop and
/// no staging. kWarps: the CTA's warps rounded up to a power of two, at most 8 (the row sum is a
/// WarpSums), or 0 for larger CTAs (cta_sum). Every CTA releases the next kernel after its
/// stores (measured faster than before the wait, docs/kernels/norm.md).
template <int kPacks, bool kAllInside, std::uint32_t kWarps, bool kUsePDL, typename T>
__global__ void __launch_bounds__(kWarps == 0 ? host::norm::kDecodeMaxThreads
                                              : kWarps * device::kWarpThreads)
    rmsnorm_decode_kernel(const __grid_constant__ RMSNormParams<T> p) {
  using namespace device::norm;
  __shared__ DecodeSumScratch<kWarps> scratch;
  // Addresses and parameters first, in source order before the PDL wait: measured faster than
  // the same statements after the wait (docs/kernels/norm.md).
  const T* input = p.input + blockIdx.x * p.input_stride;
  const T* weight = p.weight;
  const float inv_dim = p.inv_dim, eps = p.eps;
  const OwnedPacks<kPacks, kAllInside> owned(threadIdx.x, blockDim.x, p.num_packs);
  decltype(auto) sum_slots = decode_sum_slots(scratch);
  device::PDLWaitPrimary<kUsePDL>();
  RowSlice<T, kPacks> x, w;
  x.load_unguarded(input, owned);
  w.load_unguarded(weight, owned);
  const float sum_squares = x.sum_squares();
  const WeightedSlice<T, kPacks> weighted(x, w);
  const float sum = decode_row_sum(sum_squares, sum_slots);
  weighted.scale_into(x, rms_scale(sum, inv_dim, eps));
  x.store(p.out + blockIdx.x * p.out_stride, owned);
  device::PDLTriggerSecondary<kUsePDL>();
}

/// out = rmsnorm(input) * weight.
///   input:  [N, D] fp16/bf16, strides (any, 1), 16-byte aligned rows, CUDA
///   weight: [D] contiguous, same dtype/device, 16-byte aligned
///   out:    [N, D] strides (any, 1), same dtype/device, 16-byte aligned, rows must not overlap;
///           out may be input itself (in place)
/// D: a multiple of 8 in [8, 16384]. N == 0 launches nothing.
template <typename T, bool kUsePDL, typename Config = host::norm::RowConfig<>>
void rmsnorm(tvm::ffi::TensorView out,
             tvm::ffi::TensorView input,
             tvm::ffi::TensorView weight,
             float eps) {
  using namespace host;

  auto N = SymbolicSize{"num_rows"};
  auto D = SymbolicSize{"hidden_size"};
  auto input_stride = SymbolicSize{"input_stride"};
  auto out_stride = SymbolicSize{"out_stride"};
  auto device = SymbolicDevice{};
  TensorMatcher({N, D})  //
      .with_strides({input_stride, 1})
      .with_device<kDLCUDA>(device)
      .with_dtype<T>()
      .verify(input, "input");
  const std::int64_t dim = D.unwrap();
  RuntimeCheck(norm::is_row_supported(dim),
               "rmsnorm: hidden size ",
               dim,
               " (input.size(1)) is not supported: it must be a multiple of 8 in [8, ",
               norm::kMaxRowElems,
               "]");
  TensorMatcher({N, D})  //
      .with_strides({input_stride, 1})
      .with_alignment(16)
      .verify(input, "input");
  TensorMatcher({D})  //
      .with_alignment(16)
      .with_device<kDLCUDA>(device)
      .with_dtype<T>()
      .verify(weight, "weight");
  TensorMatcher({N, D})  //
      .with_strides({out_stride, 1})
      .with_alignment(16)
      .without_internal_overlap()
      .with_device<kDLCUDA>(device)
      .with_dtype<T>()
      .verify(out, "out");

  const auto params = RMSNormParams<T>{
      .inv_dim = 1.0f / static_cast<float>(dim),
      .eps = eps,
      .out = static_cast<T*>(data_address(out)),
      .input = static_cast<const T*>(data_address(input)),
      .weight = static_cast<const T*>(data_address(weight)),
      .out_stride = out_stride.unwrap(),
      .input_stride = input_stride.unwrap(),
      .num_rows = N.unwrap(),
      .num_packs = static_cast<std::uint32_t>(dim / 8),
  };
  const DLDevice dev = device.unwrap();
  if (norm::use_decode_plan<Config>(params.num_rows)) {
    const auto launch = [&]<int kPacks>() {
      const std::uint32_t warps = div_ceil(div_ceil(params.num_packs, std::uint32_t{kPacks}), 32u);
      norm::dispatch_decode_warps<kPacks>(warps, [&]<std::uint32_t kWarps>() {
        const auto kernel_for = [&]<bool kAllInside>() {
          LaunchKernel(static_cast<unsigned>(params.num_rows), warps * 32u, dev)
              .enable_pdl(kUsePDL)(rmsnorm_decode_kernel<kPacks, kAllInside, kWarps, kUsePDL, T>,
                                   params);
        };
        if (params.num_packs == warps * 32u * kPacks) return kernel_for.template operator()<true>();
        kernel_for.template operator()<false>();
      });
    };
    if (norm::decode_packs_per_thread(params.num_packs) == 1)
      return launch.template operator()<1>();
    return launch.template operator()<2>();
  }
  norm::dispatch_rows<Config::kWarpCtaThreads>(
      params.num_packs,
      [&]<std::uint32_t kGroup, int kPacks>(std::uint32_t threads, std::uint32_t rows_per_cta) {
        constexpr int kRows = norm::rows_per_group(kGroup, kPacks, 1, Config::kRowsPerGroup);
        const auto kernel_for = []<int kR>() {
          return rmsnorm_kernel<kGroup, kPacks, kR, Config::kWarpCtaThreads, kUsePDL, T>;
        };
        norm::launch_row_plan<kGroup, kPacks, kRows>(
            kernel_for, params, threads, rows_per_cta, dev, kUsePDL);
      });
}

/// The module's export: rmsnorm for input's dtype (fp16, bf16).
template <bool kUsePDL, typename Config = host::norm::RowConfig<>>
void rmsnorm_by_dtype(tvm::ffi::TensorView out,
                      tvm::ffi::TensorView input,
                      tvm::ffi::TensorView weight,
                      float eps) {
  host::dispatch_dtype<fp16_t, bf16_t>(input.dtype(), "rmsnorm", "input", [&]<typename T>() {
    rmsnorm<T, kUsePDL, Config>(out, input, weight, eps);
  });
}

}  // namespace
