// Row maps: out[i, :] = op over the row input[i, :] of fp16/bf16 elements, for any row operation
// that reduces the row to a sum and transforms every element with that sum (norms):
//   value = op.finish(sum over the row of op.term(x), 1 / row_size)
//   out   = round(op.apply(x, value) [* weight])
// host::row::map checks the tensors and launches; the kernels hold each row in registers (one
// read, one write), on the launch plans of sgl_kernel/impl/row/plan.cuh. Optional: a weight
// (`Weight`, multiplies every row) and a residual (`Residual`: the row is round(input + residual),
// also written back to residual). PDL when kUsePDL.
#pragma once

#include <sgl_kernel/dtype_dispatch.h>  // For dispatch_dtype
#include <sgl_kernel/tensor.h>  // For TensorMatcher, SymbolicSize, SymbolicDevice, data_address
#include <sgl_kernel/utils.h>   // For DebugInfo, panic, div_ceil
#include <sgl_kernel/impl/row/pack.cuh>    // For row::RowSlice, OwnedPacks, RowWeight, Pack
#include <sgl_kernel/impl/row/plan.cuh>    // For row::RowConfig, dispatch_rows, launch_row_plan
#include <sgl_kernel/impl/row/reduce.cuh>  // For row::RowGroups, row_sum, decode_row_sum
#include <sgl_kernel/utils.cuh>            // For LaunchKernel, PDLWaitPrimary, PDLTriggerSecondary

#include <dlpack/dlpack.h>
#include <tvm/ffi/container/tensor.h>

#include <cstdint>
#include <string_view>
#include <type_traits>

namespace device::row {

/// Whether Op declares `static constexpr bool kMultiplies = true`: its apply(x, value) is
/// x * value, so a weighted decode kernel may form x * weight before the row's sum.
template <typename Op>
inline constexpr bool kMultiplies = requires { requires Op::kMultiplies; };

/// What the row kernels read. The decode kernel's fields come first (inv_size, op, out, input,
/// weight and the two strides end by byte 48 for a 4-byte op): a field placed later was read
/// only after the PDL wait, on every call's critical path (docs/kernels/norm.md, "Decode plan").
template <typename T, typename Op>
struct MapParams {
  float inv_size;  // 1 / row size
  Op op;
  T* out;
  const T* input;
  const T* weight;            // nullptr without a weight
  std::int64_t out_stride;    // elements between rows
  std::int64_t input_stride;  // elements between rows
  T* residual;                // nullptr without a residual
  std::int64_t residual_stride;
  std::int64_t num_rows;
  std::uint32_t num_packs;  // 16-byte packs per row
};

/// Rows are split among groups of kGroup lanes (0: the whole CTA); each thread keeps kPacks
/// packs of its row in registers. Each group takes kRows rows per iteration (rows base + r *
/// groups + group), all loaded before the first reduction. The loop over rows is uniform across
/// the CTA (every lane reaches every shuffle / barrier).
template <std::uint32_t kGroup,
          int kPacks,
          int kRows,
          std::uint32_t kWarpThreads,
          bool kWeighted,
          bool kResidual,
          bool kUsePDL,
          typename T,
          typename Op>
__global__ void __launch_bounds__(
    host::row::max_threads(kGroup, kWarpThreads),
    host::row::min_blocks(kGroup, kPacks, kRows, kResidual ? 2 : 1, kWarpThreads))
    map_kernel(const MapParams<T, Op> p) {
  using Rows = RowGroups<kGroup>;
  using Slice = RowSlice<T, kPacks>;
  static_assert(kRows >= 1 && (kRows == 1 || kGroup != 0), "several rows: warp groups only");
  __shared__ CtaSumScratch scratch;
  extern __shared__ __align__(16) unsigned char row_smem[];  // staged weight: kPacks x blockDim
  Pack* const weight_slots = reinterpret_cast<Pack*>(row_smem) + threadIdx.x;

  device::PDLWaitPrimaryTriggerSecondary<kUsePDL>();

  const std::uint32_t rank = Rows::rank();
  const std::uint32_t step = Rows::size();
  // Every row this thread touches uses the same weight packs (registers, loaded with each batch
  // of rows, or shared-memory slots staged once: see RowWeight).
  RowWeight<T, kPacks, kWeightInRegisters<kGroup>> weight;
  if constexpr (kWeighted)
    weight.stage(p.weight, rank, step, p.num_packs, weight_slots, blockDim.x);

  const std::int64_t groups = Rows::per_cta();
  const std::int64_t rows_per_cta = groups * kRows;
  const std::int64_t row_step = static_cast<std::int64_t>(gridDim.x) * rows_per_cta;
  std::uint32_t call = 0;
  for (std::int64_t base = blockIdx.x * rows_per_cta; base < p.num_rows; base += row_step) {
    Slice x[kRows];
    Slice residual[kResidual ? kRows : 1];
    std::int64_t safe_row[kRows];
    std::uint32_t packs[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const std::int64_t row = base + r * groups + Rows::index();
      const bool valid = row < p.num_rows;
      safe_row[r] = valid ? row : 0;
      packs[r] = valid ? p.num_packs : 0u;
      if constexpr (kResidual) {
        residual[r].load_unguarded(
            p.residual + safe_row[r] * p.residual_stride, rank, step, packs[r]);
      }
      x[r].load_unguarded(p.input + safe_row[r] * p.input_stride, rank, step, packs[r]);
    }
    if constexpr (kWeighted) weight.load(p.weight, rank, step, p.num_packs);
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      if constexpr (kResidual) {
        x[r].add(residual[r]);
        x[r].store(p.residual + safe_row[r] * p.residual_stride, rank, step, packs[r]);
      }
      const float sum = row_sum<kGroup>(x[r].reduce(p.op), scratch, call++);
      const float value = p.op.finish(sum, p.inv_size);
      if constexpr (kWeighted) {
        if (r == 0) weight.ready(weight_slots, blockDim.x);
        x[r].apply(p.op, value, weight.slice);
      } else {
        x[r].apply(p.op, value);
      }
      x[r].store(p.out + safe_row[r] * p.out_stride, rank, step, packs[r]);
    }
  }
}

/// The decode plan (few rows): CTA b maps row b, thread t holding packs t, t + blockDim.x, ...
/// (kPacks of them; kAllInside: the CTA covers the row exactly, no checks). No row loop and no
/// staging. kWarps: the CTA's warps rounded up to a power of two, at most 8 (the row sum is a
/// WarpSums), or 0 for larger CTAs (cta_sum). Every CTA releases the next kernel after its
/// stores (measured faster than before the wait, docs/kernels/norm.md).
template <int kPacks,
          bool kAllInside,
          std::uint32_t kWarps,
          bool kWeighted,
          bool kResidual,
          bool kUsePDL,
          typename T,
          typename Op>
__global__ void __launch_bounds__(kWarps == 0 ? host::row::kDecodeMaxThreads
                                              : kWarps * device::kWarpThreads)
    map_decode_kernel(const __grid_constant__ MapParams<T, Op> p) {
  __shared__ DecodeSumScratch<kWarps> scratch;
  // Addresses and parameters first, in source order before the PDL wait: measured faster than
  // the same statements after the wait (docs/kernels/norm.md).
  const T* input = p.input + blockIdx.x * p.input_stride;
  const T* weight_row = p.weight;
  const Op op = p.op;
  const float inv_size = p.inv_size;
  const OwnedPacks<kPacks, kAllInside> owned(threadIdx.x, blockDim.x, p.num_packs);
  decltype(auto) sum_slots = decode_sum_slots(scratch);
  device::PDLWaitPrimary<kUsePDL>();
  RowSlice<T, kPacks> x, weight, residual;
  if constexpr (kResidual)
    residual.load_unguarded(p.residual + blockIdx.x * p.residual_stride, owned);
  x.load_unguarded(input, owned);
  if constexpr (kWeighted) weight.load_unguarded(weight_row, owned);
  if constexpr (kResidual) {
    x.add(residual);
    x.store(p.residual + blockIdx.x * p.residual_stride, owned);
  }
  const float partial = x.reduce(op);
  if constexpr (kWeighted && kMultiplies<Op>) {
    // x * w before the sum (both loads issue together), one multiply per element after it.
    const WeightedSlice<T, kPacks> weighted(x, weight);
    weighted.scale_into(x, op.finish(decode_row_sum(partial, sum_slots), inv_size));
  } else if constexpr (kWeighted) {
    weight.pin();  // waited for before the sum, so its load is issued with the row's
    x.apply(op, op.finish(decode_row_sum(partial, sum_slots), inv_size), weight);
  } else {
    x.apply(op, op.finish(decode_row_sum(partial, sum_slots), inv_size));
  }
  x.store(p.out + blockIdx.x * p.out_stride, owned);
  device::PDLTriggerSecondary<kUsePDL>();
}

}  // namespace device::row

namespace host::row {

/// A row tensor [N, D] (unit stride along D, any row stride) and the name its errors use.
struct Arg {
  tvm::ffi::TensorView view;
  const char* name;
};
/// Optional: a [D] weight multiplying every output row (contiguous).
struct Weight {
  tvm::ffi::TensorView view;
  const char* name = "weight";
};
/// Optional: a residual [N, D] added to the input first; the sum is written back to it and is
/// the row the operation sees (fused_add_rmsnorm). Written, so it must be distinct memory.
struct Residual {
  tvm::ffi::TensorView view;
  const char* name = "residual";
};

/// Launches the plan for params.num_rows rows (at least one).
template <typename Config, bool kWeighted, bool kResidual, bool kUsePDL, typename T, typename Op>
void launch_map(const device::row::MapParams<T, Op>& params, DLDevice dev) {
  if (use_decode_plan<Config>(params.num_rows)) {
    const auto launch = [&]<int kPacks>() {
      const std::uint32_t warps = div_ceil(div_ceil(params.num_packs, std::uint32_t{kPacks}), 32u);
      dispatch_decode_warps<kPacks>(warps, [&]<std::uint32_t kWarps>() {
        const auto launch_exact = [&]<bool kAllInside>() {
          LaunchKernel(static_cast<unsigned>(params.num_rows), warps * 32u, dev)
              .enable_pdl(kUsePDL)(device::row::map_decode_kernel<kPacks,
                                                                  kAllInside,
                                                                  kWarps,
                                                                  kWeighted,
                                                                  kResidual,
                                                                  kUsePDL,
                                                                  T,
                                                                  Op>,
                                   params);
        };
        if (params.num_packs == warps * 32u * kPacks) {
          return launch_exact.template operator()<true>();
        }
        launch_exact.template operator()<false>();
      });
    };
    if (decode_packs_per_thread(params.num_packs) == 1) return launch.template operator()<1>();
    return launch.template operator()<2>();
  }
  dispatch_rows<Config::kWarpCtaThreads>(
      params.num_packs,
      [&]<std::uint32_t kGroup, int kPacks>(std::uint32_t threads, std::uint32_t rows_per_cta) {
        constexpr int kRows =
            rows_per_group(kGroup, kPacks, kResidual ? 2 : 1, Config::kRowsPerGroup);
        const auto kernel_for = []<int kR>() {
          return device::row::map_kernel<kGroup,
                                         kPacks,
                                         kR,
                                         Config::kWarpCtaThreads,
                                         kWeighted,
                                         kResidual,
                                         kUsePDL,
                                         T,
                                         Op>;
        };
        launch_row_plan<kGroup, kPacks, kRows>(
            kernel_for, params, threads, rows_per_cta, dev, kUsePDL, kWeighted);
      });
}

/// The checks and launch of map_typed with an optional weight and residual (null: none).
template <typename T, bool kUsePDL, typename Config, bool kWeighted, bool kResidual, typename Op>
void map_checked(const Op& op,
                 const Arg& out,
                 const Arg& input,
                 const Weight* weight_arg,
                 const Residual* residual_arg,
                 const DebugInfo& location) {
  auto N = SymbolicSize{"num_rows"};
  auto D = SymbolicSize{"row_size"};
  auto input_stride = SymbolicSize{"input_stride"};
  auto out_stride = SymbolicSize{"out_stride"};
  auto residual_stride = SymbolicSize{"residual_stride"};
  auto device = SymbolicDevice{};
  TensorMatcher({N, D})  //
      .with_strides({input_stride, 1})
      .with_device<kDLCUDA>(device)
      .with_dtype<T>()
      .verify(input.view, input.name, location);
  const std::int64_t dim = D.unwrap();
  if (!is_row_supported(dim)) {
    panic(location,
          details::short_function_name(location.function_name()),
          ": row size ",
          dim,
          " (",
          input.name,
          ".size(1)) is not supported: it must be a multiple of 8 in [8, ",
          kMaxRowElems,
          "]");
  }
  TensorMatcher({N, D})  //
      .with_strides({input_stride, 1})
      .with_alignment(16)
      .verify(input.view, input.name, location);
  const T* weight = nullptr;
  if constexpr (kWeighted) {
    TensorMatcher({D})  //
        .with_alignment(16)
        .with_device<kDLCUDA>(device)
        .with_dtype<T>()
        .verify(weight_arg->view, weight_arg->name, location);
    weight = static_cast<const T*>(data_address(weight_arg->view));
  }
  T* residual = nullptr;
  if constexpr (kResidual) {
    TensorMatcher({N, D})  //
        .with_strides({residual_stride, 1})
        .with_alignment(16)
        .without_internal_overlap()
        .with_device<kDLCUDA>(device)
        .with_dtype<T>()
        .verify(residual_arg->view, residual_arg->name, location);
    residual = static_cast<T*>(data_address(residual_arg->view));
    if (N.unwrap() != 0 &&
        (residual == data_address(input.view) || residual == data_address(out.view))) {
      panic(location,
            details::short_function_name(location.function_name()),
            ": ",
            input.name,
            " and ",
            residual_arg->name,
            " are the same memory; both are written, they must be different tensors");
    }
  }
  TensorMatcher({N, D})  //
      .with_strides({out_stride, 1})
      .with_alignment(16)
      .without_internal_overlap()
      .with_device<kDLCUDA>(device)
      .with_dtype<T>()
      .verify(out.view, out.name, location);

  const auto params = device::row::MapParams<T, Op>{
      .inv_size = 1.0f / static_cast<float>(dim),
      .op = op,
      .out = static_cast<T*>(data_address(out.view)),
      .input = static_cast<const T*>(data_address(input.view)),
      .weight = weight,
      .out_stride = out_stride.unwrap(),
      .input_stride = input_stride.unwrap(),
      .residual = residual,
      .residual_stride = kResidual ? residual_stride.unwrap() : 0,
      .num_rows = N.unwrap(),
      .num_packs = static_cast<std::uint32_t>(dim / 8),
  };
  if (params.num_rows == 0) return;
  launch_map<Config, kWeighted, kResidual, kUsePDL>(params, device.unwrap());
}

/// out = op over the rows of input for one element type T (fp16_t or bf16_t) and launch shape
/// Config; errors name the calling function and the tensor.
///   input:    [N, D], strides (any, 1), CUDA, 16-byte aligned rows
///   out:      the same shape, dtype and device; its rows must not overlap; may be input itself
///   weight:   [D] contiguous, 16-byte aligned: out = round(op.apply(x, value) * weight)
///   residual: [N, D] like out, neither input nor out: the row is round(input + residual),
///             written back to residual first
/// D: a multiple of 8 in [8, 16384] (is_row_supported). N == 0 launches nothing.
template <typename T, bool kUsePDL, typename Config = RowConfig<>, typename Op>
void map_typed(const Op& op, const Arg& out, const Arg& input, DebugInfo location = {}) {
  map_checked<T, kUsePDL, Config, false, false>(op, out, input, nullptr, nullptr, location);
}
template <typename T, bool kUsePDL, typename Config = RowConfig<>, typename Op>
void map_typed(
    const Op& op, const Arg& out, const Arg& input, const Weight& weight, DebugInfo location = {}) {
  map_checked<T, kUsePDL, Config, true, false>(op, out, input, &weight, nullptr, location);
}
template <typename T, bool kUsePDL, typename Config = RowConfig<>, typename Op>
void map_typed(const Op& op,
               const Arg& out,
               const Arg& input,
               const Residual& residual,
               const Weight& weight,
               DebugInfo location = {}) {
  map_checked<T, kUsePDL, Config, true, true>(op, out, input, &weight, &residual, location);
}

/// map_typed for input's dtype among Ts (else an error naming the function and input), e.g.
/// `map<kUsePDL, fp16_t, bf16_t>(L2NormOp{eps}, {out, "out"}, {input, "input"})`, or with a
/// `Weight{weight}` after input. `op` is a struct of three const SGL_DEVICE functions, in fp32:
///   float term(float x)                      one element's share of the row's sum
///   float finish(float sum, float inv_size)  the row's value from its sum (inv_size = 1 / D)
///   float apply(float x, float value)        one output element (before the weight)
/// and optionally `static constexpr bool kMultiplies = true` when apply(x, value) is x * value
/// (a weighted decode batch then computes round((x * weight) * value); docs/header-library.md).
template <bool kUsePDL, typename... Ts, typename Op>
void map(const Op& op, const Arg& out, const Arg& input, DebugInfo location = {}) {
  const auto body = [&]<typename T>() { map_typed<T, kUsePDL>(op, out, input, location); };
  dispatch_dtype<Ts...>(input.view.dtype(),
                        details::short_function_name(location.function_name()),
                        input.name,
                        body,
                        location);
}
template <bool kUsePDL, typename... Ts, typename Op>
void map(
    const Op& op, const Arg& out, const Arg& input, const Weight& weight, DebugInfo location = {}) {
  const auto body = [&]<typename T>() { map_typed<T, kUsePDL>(op, out, input, weight, location); };
  dispatch_dtype<Ts...>(input.view.dtype(),
                        details::short_function_name(location.function_name()),
                        input.name,
                        body,
                        location);
}

}  // namespace host::row
