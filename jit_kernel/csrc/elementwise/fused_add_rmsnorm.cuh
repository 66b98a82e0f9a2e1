// fused_add_rmsnorm, in place: residual = round(input + residual);
// input = round(rmsnorm(residual) * weight). fp16/bf16, fp32 math, rows of any stride; every row
// size (8..16384, multiple of 8) dispatched in C++.
#include <sgl_kernel/dtype_dispatch.h>  // For dispatch_dtype
#include <sgl_kernel/tensor.h>  // For TensorMatcher, SymbolicSize, SymbolicDevice, data_address
#include <sgl_kernel/utils.h>   // For RuntimeCheck, div_ceil
#include <sgl_kernel/impl/norm.cuh>  // For norm::RowSlice, row_sum, dispatch_rows, rows_per_group
#include <sgl_kernel/utils.cuh>      // For LaunchKernel, PDLWaitPrimaryTriggerSecondary

#include <dlpack/dlpack.h>
#include <tvm/ffi/container/tensor.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace {

template <typename T>
struct FusedAddRMSNormParams {
  T* input;
  T* residual;
  const T* weight;
  std::int64_t input_stride;     // elements between rows
  std::int64_t residual_stride;  // elements between rows
  std::int64_t num_rows;
  std::uint32_t num_packs;  // 16-byte packs per row (D / 8)
  float inv_dim;            // 1 / D
  float eps;
};

/// Same row partition as rmsnorm_kernel (kGroup lanes per row, 0: the whole CTA; kRows rows
/// per group and iteration, all loaded before the first reduction). Each thread reads its packs
/// of input and residual once, writes the rounded sum to residual at once, and normalises that
/// rounded sum (what a later read of residual returns) into input.
template <std::uint32_t kGroup,
          int kPacks,
          int kRows,
          std::uint32_t kWarpThreads,
          bool kUsePDL,
          typename T>
__global__ void __launch_bounds__(host::norm::max_threads(kGroup, kWarpThreads),
                                  host::norm::min_blocks(kGroup, kPacks, kRows, 2, kWarpThreads))
    fused_add_rmsnorm_kernel(const FusedAddRMSNormParams<T> p) {
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
    Slice sum[kRows], x[kRows];
    T* input_row[kRows];
    T* residual_row[kRows];
    std::uint32_t packs[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const std::int64_t row = base + r * groups + Rows::index();
      const bool valid = row < p.num_rows;
      const std::int64_t safe_row = valid ? row : 0;
      packs[r] = valid ? p.num_packs : 0u;
      input_row[r] = p.input + safe_row * p.input_stride;
      residual_row[r] = p.residual + safe_row * p.residual_stride;
      sum[r].load_unguarded(residual_row[r], rank, step, packs[r]);
      x[r].load_unguarded(input_row[r], rank, step, packs[r]);
    }
    weight.load(p.weight, rank, step, p.num_packs);
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      sum[r].add(x[r]);
      sum[r].store(residual_row[r], rank, step, packs[r]);
      const float total = row_sum<kGroup>(sum[r].sum_squares(), scratch, call++);
      if (r == 0) weight.ready(weight_slots, blockDim.x);
      sum[r].scale(weight.slice, rms_scale(total, p.inv_dim, p.eps));
      sum[r].store(input_row[r], rank, step, packs[r]);
    }
  }
}

/// In place: residual = input + residual; input = rmsnorm(residual) * weight.
///   input:    [N, D] fp16/bf16, strides (any, 1), CUDA, 16-byte aligned, rows must not overlap
///   residual: [N, D] strides (any, 1), same dtype/device, 16-byte aligned, rows must not
///             overlap; must not share memory with input
///   weight:   [D] contiguous, same dtype/device, 16-byte aligned
/// D: a multiple of 8 in [8, 16384]. N == 0 launches nothing.
template <typename T, bool kUsePDL, typename Config = host::norm::RowConfig<>>
void fused_add_rmsnorm(tvm::ffi::TensorView input,
                       tvm::ffi::TensorView residual,
                       tvm::ffi::TensorView weight,
                       float eps) {
  using namespace host;

  auto N = SymbolicSize{"num_rows"};
  auto D = SymbolicSize{"hidden_size"};
  auto input_stride = SymbolicSize{"input_stride"};
  auto residual_stride = SymbolicSize{"resid_stride"};
  auto device = SymbolicDevice{};
  TensorMatcher({N, D})  //
      .with_strides({input_stride, 1})
      .with_device<kDLCUDA>(device)
      .with_dtype<T>()
      .verify(input, "input");
  const std::int64_t dim = D.unwrap();
  RuntimeCheck(norm::is_row_supported(dim),
               "fused_add_rmsnorm: hidden size ",
               dim,
               " (input.size(1)) is not supported: it must be a multiple of 8 in [8, ",
               norm::kMaxRowElems,
               "]");
  TensorMatcher({N, D})  //
      .with_strides({input_stride, 1})
      .with_alignment(16)
      .without_internal_overlap()
      .verify(input, "input");
  TensorMatcher({N, D})  //
      .with_strides({residual_stride, 1})
      .with_alignment(16)
      .without_internal_overlap()
      .with_device<kDLCUDA>(device)
      .with_dtype<T>()
      .verify(residual, "residual");
  TensorMatcher({D})  //
      .with_alignment(16)
      .with_device<kDLCUDA>(device)
      .with_dtype<T>()
      .verify(weight, "weight");
  RuntimeCheck(data_address(input) != data_address(residual) || N.unwrap() == 0,
               "fused_add_rmsnorm: input and residual are the same memory; both are written, "
               "they must be different tensors");

  const auto params = FusedAddRMSNormParams<T>{
      .input = static_cast<T*>(data_address(input)),
      .residual = static_cast<T*>(data_address(residual)),
      .weight = static_cast<const T*>(data_address(weight)),
      .input_stride = input_stride.unwrap(),
      .residual_stride = residual_stride.unwrap(),
      .num_rows = N.unwrap(),
      .num_packs = static_cast<std::uint32_t>(dim / 8),
      .inv_dim = 1.0f / static_cast<float>(dim),
      .eps = eps,
  };
  const DLDevice dev = device.unwrap();
  norm::dispatch_rows<Config::kWarpCtaThreads>(
      params.num_packs,
      [&]<std::uint32_t kGroup, int kPacks>(std::uint32_t threads, std::uint32_t rows_per_cta) {
        constexpr int kRows = norm::rows_per_group(kGroup, kPacks, 2, Config::kRowsPerGroup);
        const auto kernel_for = []<int kR>() {
          return fused_add_rmsnorm_kernel<kGroup, kPacks, kR, Config::kWarpCtaThreads, kUsePDL, T>;
        };
        norm::launch_row_plan<kGroup, kPacks, kRows>(
            kernel_for, params, threads, rows_per_cta, dev, kUsePDL);
      });
}

/// The module's export: fused_add_rmsnorm for input's dtype (fp16, bf16).
template <bool kUsePDL, typename Config = host::norm::RowConfig<>>
void fused_add_rmsnorm_by_dtype(tvm::ffi::TensorView input,
                                tvm::ffi::TensorView residual,
                                tvm::ffi::TensorView weight,
                                float eps) {
  host::dispatch_dtype<fp16_t, bf16_t>(
      input.dtype(), "fused_add_rmsnorm", "input", [&]<typename T>() {
        fused_add_rmsnorm<T, kUsePDL, Config>(input, residual, weight, eps);
      });
}

}  // namespace
