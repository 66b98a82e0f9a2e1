// fused_inplace_qknorm: per-head RMSNorm of q [T, Hq, D] and k [T, Hk, D] in place, one launch,
// fp16/bf16, fp32 math, head_dim D in {64, 128, 256, 512} dispatched in C++. One CTA per group of
// heads of both tensors.
#include <sgl_kernel/dtype_dispatch.h>  // For dispatch_dtype
#include <sgl_kernel/tensor.h>  // For TensorMatcher, SymbolicSize, SymbolicDevice, data_address
#include <sgl_kernel/utils.h>   // For RuntimeCheck, div_ceil
#include <sgl_kernel/impl/norm.cuh>        // For norm::RmsOp
#include <sgl_kernel/impl/row/pack.cuh>    // For row::RowSlice
#include <sgl_kernel/impl/row/plan.cuh>    // For row::dispatch_rows, row::kWarpPacks
#include <sgl_kernel/impl/row/reduce.cuh>  // For row::RowGroups, row::group_sum
#include <sgl_kernel/utils.cuh>            // For LaunchKernel, PDLTriggerSecondary, PDLWaitPrimary

#include <dlpack/dlpack.h>
#include <tvm/ffi/container/tensor.h>

#include <cstdint>

namespace {

/// The launch shape of qknorm; the defaults ship.
///   kCtaThreads  threads per CTA (a multiple of 32, at most 1024)
///   kItems       heads each lane group takes per iteration, all loaded before the first
///                reduction (1..8)
template <std::uint32_t kCtaThreads_ = 128, int kItems_ = 1>
struct QKNormConfig {
  static constexpr std::uint32_t kCtaThreads = kCtaThreads_;
  static constexpr int kItems = kItems_;
  static_assert(kCtaThreads >= 32 && kCtaThreads <= 1024 && kCtaThreads % 32 == 0,
                "QKNormConfig: kCtaThreads must be a multiple of 32 in [32, 1024]");
  static_assert(kItems >= 1 && kItems <= 8, "QKNormConfig: kItems: 1..8");
};

template <typename T>
struct QKNormParams {
  T* q;
  T* k;
  const T* q_weight;
  const T* k_weight;
  std::int64_t q_token_stride;  // elements
  std::int64_t q_head_stride;
  std::int64_t k_token_stride;
  std::int64_t k_head_stride;
  std::uint32_t num_q_heads;
  std::uint32_t num_heads;  // q heads + k heads
  std::uint32_t num_items;  // tokens * num_heads (< 2^31, checked on the host)
  std::uint32_t num_packs;  // 16-byte packs per head (D / 8)
  float inv_dim;            // 1 / D
  float eps;
};

/// Item i is head i % num_heads of token i / num_heads (q heads first, then k heads), so
/// consecutive groups touch neighbouring memory. kGroup lanes (4..32, a power of two) own one
/// head; each group takes kQKItems heads per iteration (items base + j * groups + group), all
/// loaded before the first reduction. The loop is uniform across the CTA, so every lane
/// reaches every shuffle. Each head's weight packs are loaded with it (L1 hits).
template <std::uint32_t kGroup,
          int kPacks,
          std::uint32_t kThreads,
          int kQKItems,
          bool kUsePDL,
          typename T>
__global__ void __launch_bounds__(kThreads) qknorm_kernel(const QKNormParams<T> p) {
  using namespace device::row;
  static_assert(kGroup > 0, "qknorm_kernel: heads are owned by lanes of one warp");
  using Rows = RowGroups<kGroup>;
  using Slice = RowSlice<T, kPacks>;

  device::PDLWaitPrimary<kUsePDL>();  // q and k may come from the previous kernel

  const std::uint32_t rank = Rows::rank();
  const std::uint32_t groups_per_cta = Rows::per_cta();
  const std::uint32_t items_per_cta = groups_per_cta * kQKItems;
  // < 2^32: base < num_items < 2^31 and item_step <= num_items + items_per_cta.
  const std::uint32_t item_step = gridDim.x * items_per_cta;
  for (std::uint32_t base = blockIdx.x * items_per_cta; base < p.num_items; base += item_step) {
    Slice x[kQKItems];
    Slice weight[kQKItems];
    T* row[kQKItems];
    bool is_q[kQKItems];
    std::uint32_t packs[kQKItems];
#pragma unroll
    for (int j = 0; j < kQKItems; ++j) {
      const std::uint32_t item =
          base + static_cast<std::uint32_t>(j) * groups_per_cta + Rows::index();
      const bool valid = item < p.num_items;
      const std::uint32_t safe_item = valid ? item : 0u;
      const std::uint32_t token = safe_item / p.num_heads;
      const std::uint32_t head = safe_item - token * p.num_heads;
      is_q[j] = head < p.num_q_heads;
      row[j] = is_q[j] ? p.q + token * p.q_token_stride + head * p.q_head_stride
                       : p.k + token * p.k_token_stride + (head - p.num_q_heads) * p.k_head_stride;
      packs[j] = valid ? p.num_packs : 0u;
      x[j].load(row[j], rank, kGroup, packs[j]);
      weight[j].load(is_q[j] ? p.q_weight : p.k_weight, rank, kGroup, packs[j]);  // L1 hits
    }
#pragma unroll
    for (int j = 0; j < kQKItems; ++j) {
      const device::norm::RmsOp op{p.eps};
      const float sum = group_sum<kGroup>(x[j].reduce(op));
      x[j].apply(op, op.finish(sum, p.inv_dim), weight[j]);
      x[j].store(row[j], rank, kGroup, packs[j]);
    }
  }
  // Release the next kernel after the stores: faster at decode sizes than before the wait, when
  // the graph was warmed up right before its capture (docs/kernels/norm.md, "PDL").
  device::PDLTriggerSecondary<kUsePDL>();
}

/// True for the head sizes fused_inplace_qknorm supports.
inline bool is_head_dim_supported(std::int64_t head_dim) {
  return head_dim == 64 || head_dim == 128 || head_dim == 256 || head_dim == 512;
}

/// In place: q[t, h, :] = rmsnorm(q[t, h, :]) * q_weight, k[t, h, :] = rmsnorm(k[t, h, :]) *
/// k_weight.
///   q: [T, Hq, D] fp16/bf16, strides (any, any, 1), CUDA, 16-byte aligned, no internal overlap
///   k: [T, Hk, D] the same (same T, D, dtype, device); must not share memory with q
///   q_weight, k_weight: [D] contiguous, same dtype/device, 16-byte aligned
/// D in {64, 128, 256, 512}. Nothing to do (T == 0 or no heads) launches nothing.
template <typename T, bool kUsePDL, typename Config = QKNormConfig<>>
void fused_inplace_qknorm(tvm::ffi::TensorView q,
                          tvm::ffi::TensorView k,
                          tvm::ffi::TensorView q_weight,
                          tvm::ffi::TensorView k_weight,
                          float eps) {
  using namespace host;

  auto T_ = SymbolicSize{"num_tokens"};
  auto Hq = SymbolicSize{"num_q_heads"};
  auto Hk = SymbolicSize{"num_k_heads"};
  auto D = SymbolicSize{"head_dim"};
  auto q_token_stride = SymbolicSize{"q_token_stride"};
  auto q_head_stride = SymbolicSize{"q_head_stride"};
  auto k_token_stride = SymbolicSize{"k_token_stride"};
  auto k_head_stride = SymbolicSize{"k_head_stride"};
  auto device = SymbolicDevice{};
  TensorMatcher({T_, Hq, D})  //
      .with_strides({q_token_stride, q_head_stride, 1})
      .with_device<kDLCUDA>(device)
      .with_dtype<T>()
      .verify(q, "q");
  const std::int64_t dim = D.unwrap();
  RuntimeCheck(is_head_dim_supported(dim),
               "fused_inplace_qknorm: head_dim ",
               dim,
               " (q.size(2)) is not supported: it must be one of 64, 128, 256, 512");
  TensorMatcher({T_, Hq, D})  //
      .with_strides({q_token_stride, q_head_stride, 1})
      .with_alignment(16)
      .without_internal_overlap()
      .verify(q, "q");
  TensorMatcher({T_, Hk, D})  //
      .with_strides({k_token_stride, k_head_stride, 1})
      .with_alignment(16)
      .without_internal_overlap()
      .with_device<kDLCUDA>(device)
      .with_dtype<T>()
      .verify(k, "k");
  TensorMatcher({D})  //
      .with_alignment(16)
      .with_device<kDLCUDA>(device)
      .with_dtype<T>()
      .verify(q_weight, "q_weight")
      .verify(k_weight, "k_weight");

  const std::int64_t tokens = T_.unwrap();
  const std::int64_t num_heads = Hq.unwrap() + Hk.unwrap();
  const std::int64_t num_items = tokens * num_heads;
  RuntimeCheck(num_items < (std::int64_t{1} << 31),
               "fused_inplace_qknorm: ",
               tokens,
               " tokens x ",
               num_heads,
               " heads is too many (at most 2^31 - 1 heads per call)");
  RuntimeCheck(
      num_items == 0 || Hq.unwrap() == 0 || Hk.unwrap() == 0 || data_address(q) != data_address(k),
      "fused_inplace_qknorm: q and k are the same memory; they must be different heads");

  const auto params = QKNormParams<T>{
      .q = static_cast<T*>(data_address(q)),
      .k = static_cast<T*>(data_address(k)),
      .q_weight = static_cast<const T*>(data_address(q_weight)),
      .k_weight = static_cast<const T*>(data_address(k_weight)),
      .q_token_stride = q_token_stride.unwrap(),
      .q_head_stride = q_head_stride.unwrap(),
      .k_token_stride = k_token_stride.unwrap(),
      .k_head_stride = k_head_stride.unwrap(),
      .num_q_heads = static_cast<std::uint32_t>(Hq.unwrap()),
      .num_heads = static_cast<std::uint32_t>(num_heads),
      .num_items = static_cast<std::uint32_t>(num_items),
      .num_packs = static_cast<std::uint32_t>(dim / 8),
      .inv_dim = 1.0f / static_cast<float>(dim),
      .eps = eps,
  };
  if (num_items == 0) return;
  const DLDevice dev = device.unwrap();
  row::dispatch_rows<Config::kCtaThreads>(
      params.num_packs, [&]<std::uint32_t kGroup, int kPacks>(std::uint32_t, std::uint32_t) {
        // head_dim <= 512 (64 packs) always gets a warp group with kWarpPacks packs per lane; the
        // other plans are not instantiated.
        if constexpr (kGroup != 0 && kPacks == row::kWarpPacks) {
          constexpr std::uint32_t kThreads = Config::kCtaThreads;
          constexpr auto kernel =
              qknorm_kernel<kGroup, kPacks, kThreads, Config::kItems, kUsePDL, T>;
          constexpr std::int64_t kItemsPerCta = std::int64_t{kThreads / kGroup} * Config::kItems;
          const std::int64_t grid = div_ceil(num_items, kItemsPerCta);
          LaunchKernel(static_cast<unsigned>(grid), kThreads, dev)
              .enable_pdl(kUsePDL)(kernel, params);
        } else {
          Panic("fused_inplace_qknorm: no warp-group plan for head_dim ", dim);
        }
      });
}

/// The module's export: fused_inplace_qknorm for q's dtype (fp16, bf16).
template <bool kUsePDL, typename Config = QKNormConfig<>>
void fused_inplace_qknorm_by_dtype(tvm::ffi::TensorView q,
                                   tvm::ffi::TensorView k,
                                   tvm::ffi::TensorView q_weight,
                                   tvm::ffi::TensorView k_weight,
                                   float eps) {
  host::dispatch_dtype<fp16_t, bf16_t>(q.dtype(), "fused_inplace_qknorm", "q", [&]<typename T>() {
    fused_inplace_qknorm<T, kUsePDL, Config>(q, k, q_weight, k_weight, eps);
  });
}

}  // namespace
