// Element-wise maps out[i] = op(in_0[i], in_1[i], ...) over contiguous memory, for any number of
// inputs of one element type: 16-byte vector loads/stores when every pointer is 16-byte aligned
// (a scalar path otherwise), several independent loads in flight per thread, a scalar tail,
// optional PDL; small maps (decode) take one 8-byte vector per thread. host::elementwise::map
// also checks the tensors and dispatches the dtype.
#pragma once

#include <sgl_kernel/dtype_dispatch.h>  // For dispatch_dtype
#include <sgl_kernel/tensor.h>          // For TensorMatcher, SymbolicDevice, data_address
#include <sgl_kernel/utils.h>           // For div_ceil, DebugInfo
#include <sgl_kernel/utils.cuh>         // For LaunchKernel, SGL_DEVICE, PDL helpers
#include <sgl_kernel/vec.cuh>           // For AlignedVector

#include <dlpack/dlpack.h>
#include <tvm/ffi/container/tensor.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <utility>

namespace device::elementwise {

/// *ptr through the read-only data cache (ld.global.nc), the load a `const T* __restrict__`
/// kernel parameter gets; the inputs are a parameter pack, where gcc rejects __restrict__.
template <typename V>
SGL_DEVICE V load_readonly(const V* ptr) {
  static_assert(sizeof(V) <= 16 && (sizeof(V) & (sizeof(V) - 1)) == 0, "1 to 16 bytes");
  using Raw = std::conditional_t<
      sizeof(V) == 16,
      uint4,
      std::conditional_t<
          sizeof(V) == 8,
          uint2,
          std::conditional_t<sizeof(V) == 4,
                             unsigned int,
                             std::conditional_t<sizeof(V) == 2, unsigned short, unsigned char>>>>;
  const Raw raw = __ldg(reinterpret_cast<const Raw*>(ptr));
  V value;
  *reinterpret_cast<Raw*>(&value) = raw;
  return value;
}

/// op(v[0][i], v[1][i], ...): element i of each input's vector.
template <typename Op, typename Vec, std::size_t... J>
SGL_DEVICE auto apply_at(const Op& op,
                         const Vec (&v)[sizeof...(J)],
                         int i,
                         std::index_sequence<J...>) {
  return op(v[J][i]...);
}

/// Tile t covers vectors [t * kUnroll * blockDim.x, (t + 1) * kUnroll * blockDim.x); thread i
/// of the block takes vectors i, i + blockDim.x, ... of it (coalesced), loading every input of
/// all kUnroll vectors before it stores any. Blocks stride over tiles. Block 0 also maps the
/// < kVecN elements after the last whole vector. Index is uint32_t when every index fits
/// (cheaper address arithmetic), else uint64_t.
template <int kVecN,
          int kUnroll,
          bool kUsePDL,
          typename Index,
          typename T,
          typename Op,
          typename... In>
__global__ void map_kernel(T* __restrict__ dst, const In*... src, Index n, Op op) {
  static_assert(sizeof...(In) > 0 && (std::is_same_v<In, T> && ...),
                "inputs have the output's type");
  constexpr int kInputs = static_cast<int>(sizeof...(In));
  using vec_t = AlignedVector<T, kVecN>;
  const Index num_vecs = n / kVecN;
  const Index tile_vecs = static_cast<Index>(blockDim.x) * kUnroll;
  const Index num_tiles = (num_vecs + tile_vecs - 1) / tile_vecs;
  auto* dst_vec = reinterpret_cast<vec_t*>(dst);

  PDLWaitPrimaryTriggerSecondary<kUsePDL>();

  for (Index tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
    const Index first = tile * tile_vecs + threadIdx.x;
    vec_t v[kUnroll][kInputs];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const Index idx = first + static_cast<Index>(k) * blockDim.x;
      if (idx < num_vecs) {
        int j = 0;
        ((v[k][j++] = load_readonly(reinterpret_cast<const vec_t*>(src) + idx)), ...);
      }
    }
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const Index idx = first + static_cast<Index>(k) * blockDim.x;
      if (idx < num_vecs) {
        vec_t out;
#pragma unroll
        for (int i = 0; i < kVecN; ++i) {
          out[i] = apply_at(op, v[k], i, std::make_index_sequence<kInputs>{});
        }
        dst_vec[idx] = out;
      }
    }
  }
  if constexpr (kVecN > 1) {
    if (blockIdx.x == 0) {
      const Index i = num_vecs * kVecN + threadIdx.x;
      if (i < n) dst[i] = op(load_readonly(src + i)...);
    }
  }
}

/// The decode plan: thread t of the grid maps vector t and nothing else (no loop). Threads with
/// nothing to map leave at once; the others release the next kernel before waiting for the
/// previous one (its launch overlaps this kernel). Plain loads: the compiler has been seen to
/// hoist a non-coherent one (__ldg) of this shape above the wait. kTail: the map ends in < kVecN
/// elements after its last whole vector, which threads of block 0 map too (the kernel without
/// kTail has no such code).
template <int kVecN, bool kTail, bool kUsePDL, typename T, typename Op, typename... In>
__global__ void map_decode_kernel(T* __restrict__ dst, const In*... src, std::uint32_t n, Op op) {
  static_assert(kVecN > 1 || !kTail, "a scalar map has no tail");
  using vec_t = AlignedVector<T, kVecN>;
  const std::uint32_t idx = blockIdx.x * blockDim.x + threadIdx.x;
  const std::uint32_t num_vecs = n / kVecN;
  const bool has_vec = idx < num_vecs;
  const std::uint32_t tail = num_vecs * kVecN + threadIdx.x;
  const bool has_tail = kTail && blockIdx.x == 0 && tail < n;
  if (!has_vec && !has_tail) return;

  PDLTriggerSecondary<kUsePDL>();
  PDLWaitPrimary<kUsePDL>();

  if (has_vec) {
    const vec_t v[] = {reinterpret_cast<const vec_t*>(src)[idx]...};
    vec_t result;
#pragma unroll
    for (int i = 0; i < kVecN; ++i) {
      result[i] = apply_at(op, v, i, std::index_sequence_for<In...>{});
    }
    reinterpret_cast<vec_t*>(dst)[idx] = result;
  }
  if constexpr (kTail) {
    if (has_tail) dst[tail] = op(src[tail]...);
  }
}

}  // namespace device::elementwise

namespace host::elementwise {

/// Threads per block and vectors each thread loads (per input) before it stores any.
inline constexpr int kBlockSize = 128;
inline constexpr int kUnroll = 2;
/// Maps of at most this many 16-byte vectors (decode batches: 16 rows of 4096 bf16) take the
/// decode plan, one 8-byte vector per thread: at most 512 blocks, one wave on an H100.
inline constexpr std::size_t kDecodeMaxVectors = std::size_t{1} << 15;
inline constexpr std::size_t kVecBytes = 16;
/// The decode plan's vectors: 8 bytes, so that twice the threads share the arithmetic of a map
/// whose time is latency (measured faster than 16-byte vectors at 2^12 and 2^16 bf16 elements).
inline constexpr std::size_t kDecodeVecBytes = 8;
inline constexpr std::size_t kMaxGrid = 1u << 30;

inline bool is_vec_aligned(const void* ptr) {
  return reinterpret_cast<std::uintptr_t>(ptr) % kVecBytes == 0;
}

template <int kVecN, bool kUsePDL, typename Index, typename T, typename Op, typename... In>
void launch_map_impl(T* dst, std::size_t n, Op op, DLDevice device, const In*... src) {
  constexpr auto kernel =
      device::elementwise::map_kernel<kVecN, kUnroll, kUsePDL, Index, T, Op, In...>;
  constexpr std::size_t kTileVecs = static_cast<std::size_t>(kBlockSize) * kUnroll;
  // Blocks stride over tiles, so a grid capped at kMaxGrid still covers everything.
  const std::size_t grid =
      std::min<std::size_t>(kMaxGrid, std::max<std::size_t>(1, div_ceil(n / kVecN, kTileVecs)));
  LaunchKernel(static_cast<unsigned>(grid), kBlockSize, device)
      .enable_pdl(kUsePDL)(kernel, dst, src..., static_cast<Index>(n), op);
}

/// The decode plan: one vector of kVecN elements per thread, the kernel with tail code only
/// when n is not a multiple of kVecN.
template <int kVecN, bool kUsePDL, typename T, typename Op, typename... In>
void launch_map_decode(T* dst, std::size_t n, Op op, DLDevice device, const In*... src) {
  const auto launch = [&]<bool kTail>() {
    constexpr auto kernel =
        device::elementwise::map_decode_kernel<kVecN, kTail, kUsePDL, T, Op, In...>;
    const std::size_t grid = std::max<std::size_t>(1, div_ceil(n / kVecN, kBlockSize));
    LaunchKernel(static_cast<unsigned>(grid), kBlockSize, device)
        .enable_pdl(kUsePDL)(kernel, dst, src..., static_cast<std::uint32_t>(n), op);
  };
  if constexpr (kVecN > 1) {
    if (n % kVecN != 0) return launch.template operator()<true>();
  }
  launch.template operator()<false>();
}

template <int kVecN, bool kUsePDL, typename T, typename Op, typename... In>
void launch_map_vec(T* dst, std::size_t n, Op op, DLDevice device, const In*... src) {
  if (n / kVecN <= kDecodeMaxVectors) {
    constexpr int kDecodeVecN =
        std::max(1, std::min(kVecN, static_cast<int>(kDecodeVecBytes / sizeof(T))));
    launch_map_decode<kDecodeVecN, kUsePDL>(dst, n, op, device, src...);
    return;
  }
  // uint32_t indexing while n plus one tile of slack fits (the tile loop may overshoot by one).
  constexpr std::size_t kSlack = static_cast<std::size_t>(kBlockSize) * kUnroll * kVecN;
  if (n + kSlack < (std::size_t{1} << 32)) {
    launch_map_impl<kVecN, kUsePDL, std::uint32_t>(dst, n, op, device, src...);
  } else {
    launch_map_impl<kVecN, kUsePDL, std::uint64_t>(dst, n, op, device, src...);
  }
}

/// dst[i] = op(src[i]...) for i < n on the stream of `device`; every pointer holds n elements
/// of T. 16-byte vectors only when dst and every src are 16-byte aligned. n == 0 launches nothing.
template <bool kUsePDL, typename T, typename Op, typename... In>
void launch_map(T* dst, std::size_t n, Op op, DLDevice device, const In*... src) {
  if (n == 0) return;
  constexpr int kVecN = static_cast<int>(kVecBytes / sizeof(T));
  if (is_vec_aligned(dst) && (is_vec_aligned(src) && ...)) {
    launch_map_vec<kVecN, kUsePDL>(dst, n, op, device, src...);
  } else {
    launch_map_vec<1, kUsePDL>(dst, n, op, device, src...);
  }
}

/// A tensor argument and the name its error messages use.
struct Arg {
  tvm::ffi::TensorView view;
  const char* name;
};

template <bool kUsePDL, typename T, typename Op, std::size_t N, std::size_t... J>
void map_typed(const Op& op,
               const Arg& out,
               const Arg (&in)[N],
               std::index_sequence<J...>,
               const DebugInfo& location) {
  auto device = SymbolicDevice{};
  // TensorMatcher is a temporary: it lives until the end of this full expression.
  const auto verify_all = [&](const TensorMatcher&& matcher) {
    (std::move(matcher).verify(in[J].view, in[J].name, location), ...);
    std::move(matcher).verify(out.view, out.name, location);
  };
  verify_all(TensorMatcher(in[0].view.shape()).with_device<kDLCUDA>(device).with_dtype<T>());
  launch_map<kUsePDL>(static_cast<T*>(data_address(out.view)),
                      static_cast<std::size_t>(in[0].view.numel()),
                      op,
                      device.unwrap(),
                      static_cast<const T*>(data_address(in[J].view))...);
}

/// out = op(in...) element-wise, e.g. `map<kUsePDL, fp16_t, bf16_t>(Op{}, {out, "out"}, {{a,
/// "a"}, {b, "b"}})`. Every tensor has in[0]'s shape (any rank), one dtype among Ts (taken from
/// in[0]) and one CUDA device; out is contiguous and is an input or overlaps none. Returns
/// false, doing nothing, when an input is not contiguous: the wrapper's cue to retry with
/// contiguous copies (cheaper on the hot path than a Python-side check). Errors name the
/// calling function and the tensor. `op` maps N values of T to a T (a template operator()
/// serves every dtype). Empty tensors launch nothing.
template <bool kUsePDL, typename... Ts, typename Op, std::size_t N>
bool map(const Op& op, const Arg& out, const Arg (&in)[N], DebugInfo location = {}) {
  static_assert(sizeof...(Ts) > 0, "map: list the supported element types");
  for (const Arg& arg : in) {
    if (!arg.view.is_contiguous()) return false;
  }
  const auto body = [&]<typename T>() {
    map_typed<kUsePDL, T>(op, out, in, std::make_index_sequence<N>{}, location);
  };
  if constexpr (sizeof...(Ts) == 1) {
    body.template operator()<Ts...>();  // TensorMatcher names a wrong dtype
  } else {
    const DLDataType dtype = in[0].view.dtype();
    // The op's name appears only in the unsupported-dtype error: parse it only then.
    const std::string_view op_name = (is_type<Ts>(dtype) || ...)
                                         ? std::string_view{}
                                         : details::short_function_name(location.function_name());
    dispatch_dtype<Ts...>(dtype, op_name, in[0].name, body, location);
  }
  return true;
}

}  // namespace host::elementwise
