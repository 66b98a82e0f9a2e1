// A thread's share of a row of fp16/bf16 elements held in registers, for the row kernels
// (sgl_kernel/impl/row/map.cuh): the row as 16-byte packs, the packs a thread owns, their loads
// (guarded, unguarded, staged through shared memory), stores, the per-row reduction and transform
// of a row operation, and the weight packs every row of a thread shares (RowWeight).
//
// A row of D elements is D / 8 packs of 16 bytes. A group of G threads owns one row: thread r of
// the group holds packs r, r + G, ..., r + (kPacks - 1) * G (coalesced: consecutive threads read
// consecutive 16-byte packs).
#pragma once

#include <sgl_kernel/cp_async.cuh>  // For cp_async::copy16, cp_async::wait_all
#include <sgl_kernel/type.cuh>      // For packed_t, device::cast, fp32x2_t
#include <sgl_kernel/utils.cuh>     // For SGL_DEVICE
#include <sgl_kernel/vec.cuh>       // For AlignedVector

#include <cstdint>

namespace device::row {

/// Bytes of every global access.
inline constexpr std::uint32_t kPackBytes = 16;

/// 16 bytes as four 32-bit words (each a packed pair of fp16/bf16). Raw words rather than
/// AlignedVector<packed_t<T>, 4>: fp16x2_t/bf16x2_t have user-defined copy assignment, which
/// splits every copy of such a vector into four 32-bit loads/stores; words keep one 128-bit
/// access per pack.
using Pack = AlignedVector<std::uint32_t, kPackBytes / sizeof(std::uint32_t)>;

/// Elements per pack (8 for fp16/bf16).
template <typename T>
inline constexpr std::uint32_t kPackElems = kPackBytes / sizeof(T);

/// The pair of T packed in `bits`, converted to fp32.
template <typename T>
SGL_DEVICE fp32x2_t unpack_pair(std::uint32_t bits) {
  packed_t<T> pair;
  static_assert(sizeof(pair) == sizeof(bits), "a packed pair of a 2-byte type");
  __builtin_memcpy(&pair, &bits, sizeof(bits));
  return cast<fp32x2_t>(pair);
}

/// `value` rounded to a pair of T (round to nearest even), as 32 bits.
template <typename T>
SGL_DEVICE std::uint32_t pack_pair(fp32x2_t value) {
  const packed_t<T> pair = cast<packed_t<T>>(value);
  std::uint32_t bits;
  __builtin_memcpy(&bits, &pair, sizeof(bits));
  return bits;
}

/// The kPacks packs a thread owns in a row of `num_packs` packs: packs first, first + step, ...
/// Each as an index clamped into the row (0 past its end, so that a load stays in the row) and
/// whether it lies inside. kAllInside: the caller guarantees every owned pack is inside (then
/// no index is checked or clamped, and no loaded pack zeroed).
template <int kPacks, bool kAllInside = false>
struct OwnedPacks {
  std::uint32_t index[kPacks];
  bool inside[kPacks];

  SGL_DEVICE OwnedPacks(std::uint32_t first, std::uint32_t step, std::uint32_t num_packs) {
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      const std::uint32_t i = first + static_cast<std::uint32_t>(k) * step;
      inside[k] = kAllInside || i < num_packs;
      index[k] = inside[k] ? i : 0u;
    }
  }
};

/// The kPacks packs of one row a thread owns: packs first, first + step, ... Packs at or past
/// `num_packs` are not accessed and read as zeros (they add nothing to the sum of squares).
template <typename T, int kPacks>
struct RowSlice {
  static_assert(sizeof(T) == 2, "RowSlice: fp16/bf16 element types only");
  static constexpr int kWords = static_cast<int>(Pack::kSize);

  Pack pack[kPacks];

  /// Loads the owned packs of the row at `row` (16-byte aligned). num_packs == 0 loads nothing.
  SGL_DEVICE void load(const T* row,
                       std::uint32_t first,
                       std::uint32_t step,
                       std::uint32_t num_packs) {
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      const std::uint32_t index = first + static_cast<std::uint32_t>(k) * step;
      if (index < num_packs) {
        pack[k].load(static_cast<const void*>(row), index);
      } else {
        pack[k].fill(0u);
      }
    }
  }

  /// load() without a branch around the loads: packs at or past `num_packs` (all of them when it
  /// is 0) read the row's pack 0 (so `row` must hold at least one) and are then zeroed. The
  /// compiler then issues the loads of every tensor at once, where guarded blocks one after
  /// another can leave a second memory round trip on the path of a short kernel.
  SGL_DEVICE void load_unguarded(const T* row,
                                 std::uint32_t first,
                                 std::uint32_t step,
                                 std::uint32_t num_packs) {
    load_unguarded(row, OwnedPacks<kPacks>(first, step, num_packs));
  }

  /// load_unguarded() of the packs `owned` names.
  template <bool kAllInside>
  SGL_DEVICE void load_unguarded(const T* row, const OwnedPacks<kPacks, kAllInside>& owned) {
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      pack[k].load(static_cast<const void*>(row), owned.index[k]);
#pragma unroll
      for (int j = 0; j < kWords; ++j) pack[k][j] = owned.inside[k] ? pack[k][j] : 0u;
    }
  }

  /// Starts copying the owned packs of `row` into this thread's shared-memory slots: pack k
  /// goes to slots[k * slot_step] (slots = smem + threadIdx.x, slot_step = blockDim.x keeps the
  /// slots private and bank-conflict free). Packs at or past num_packs are zero-filled. No
  /// registers are held while the copy is in flight; call load_staged() to read the slots.
  SGL_DEVICE static void stage(const T* row,
                               std::uint32_t first,
                               std::uint32_t step,
                               std::uint32_t num_packs,
                               Pack* slots,
                               std::uint32_t slot_step) {
    const Pack* src = static_cast<const Pack*>(static_cast<const void*>(row));
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      const std::uint32_t index = first + static_cast<std::uint32_t>(k) * step;
      const bool inside = index < num_packs;
      cp_async::copy16(
          slots + static_cast<std::uint32_t>(k) * slot_step, inside ? src + index : src, inside);
    }
  }

  /// Reads the slots filled by stage() (waits for this thread's copies first).
  SGL_DEVICE void load_staged(const Pack* slots, std::uint32_t slot_step) {
    cp_async::wait_all();
#pragma unroll
    for (int k = 0; k < kPacks; ++k) pack[k] = slots[static_cast<std::uint32_t>(k) * slot_step];
  }

  /// Stores the owned packs that lie below `num_packs`.
  SGL_DEVICE void store(T* row,
                        std::uint32_t first,
                        std::uint32_t step,
                        std::uint32_t num_packs) const {
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      const std::uint32_t index = first + static_cast<std::uint32_t>(k) * step;
      if (index < num_packs) pack[k].store(static_cast<void*>(row), index);
    }
  }

  /// Stores the packs `owned` names that lie inside the row.
  template <bool kAllInside>
  SGL_DEVICE void store(T* row, const OwnedPacks<kPacks, kAllInside>& owned) const {
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      if (owned.inside[k]) pack[k].store(static_cast<void*>(row), owned.index[k]);
    }
  }

  /// this = round(fp32(this) + fp32(other)): the residual add of fused_add_rmsnorm.
  SGL_DEVICE void add(const RowSlice& other) {
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
#pragma unroll
      for (int j = 0; j < kWords; ++j) {
        const fp32x2_t a = unpack_pair<T>(pack[k][j]);
        const fp32x2_t b = unpack_pair<T>(other.pack[k][j]);
        pack[k][j] = pack_pair<T>(fp32x2_t{a.x + b.x, a.y + b.y});
      }
    }
  }

  /// The row operation's reduction over this thread's elements, in fp32: term(x) + term(y) of
  /// each pair (independent of the other pairs), then one running sum. With two running fmaf
  /// chains instead, ptxas issued a weight load of rmsnorm's two-pack decode kernel only after
  /// the sum (docs/kernels/norm.md).
  template <typename Op>
  SGL_DEVICE float reduce(const Op& op) const {
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
#pragma unroll
      for (int j = 0; j < kWords; ++j) {
        const fp32x2_t v = unpack_pair<T>(pack[k][j]);
        sum += op.term(v.x) + op.term(v.y);
      }
    }
    return sum;
  }

  /// this = round(op.apply(fp32(this), value)): the row operation's transform, one rounding.
  template <typename Op>
  SGL_DEVICE void apply(const Op& op, float value) {
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
#pragma unroll
      for (int j = 0; j < kWords; ++j) {
        const fp32x2_t x = unpack_pair<T>(pack[k][j]);
        pack[k][j] = pack_pair<T>(fp32x2_t{op.apply(x.x, value), op.apply(x.y, value)});
      }
    }
  }

  /// this = round(op.apply(fp32(this), value) * fp32(weight)), one rounding per element.
  template <typename Op>
  SGL_DEVICE void apply(const Op& op, float value, const RowSlice& weight) {
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
#pragma unroll
      for (int j = 0; j < kWords; ++j) {
        const fp32x2_t x = unpack_pair<T>(pack[k][j]);
        const fp32x2_t w = unpack_pair<T>(weight.pack[k][j]);
        pack[k][j] = pack_pair<T>(fp32x2_t{op.apply(x.x, value) * w.x, op.apply(x.y, value) * w.y});
      }
    }
  }

  /// Makes every word of this slice an input of this point of the program: a slice loaded just
  /// before is then waited for here, so ptxas issues its loads together with the ones before
  /// (the decode kernel pins the weight before the row's sum; docs/kernels/norm.md).
  SGL_DEVICE void pin() {
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
#pragma unroll
      for (int j = 0; j < kWords; ++j) asm volatile("" : "+r"(pack[k][j]));
    }
  }
};

/// A slice times its weight, element by element in fp32, kept until the row's scale is known:
/// out = round((x * w) * scale), fp32 inside, one rounding. The decode kernel forms it before the
/// row's sum for an operation whose apply() is a product (kMultiplies), so the weight is needed
/// as early as the row and ptxas issues both loads together, and only one multiply per element
/// is left after the sum (docs/kernels/norm.md).
template <typename T, int kPacks>
struct WeightedSlice {
  static constexpr int kWords = RowSlice<T, kPacks>::kWords;

  fp32x2_t product[kPacks][kWords];

  SGL_DEVICE WeightedSlice(const RowSlice<T, kPacks>& x, const RowSlice<T, kPacks>& weight) {
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
#pragma unroll
      for (int j = 0; j < kWords; ++j) {
        const fp32x2_t a = unpack_pair<T>(x.pack[k][j]);
        const fp32x2_t b = unpack_pair<T>(weight.pack[k][j]);
        product[k][j] = fp32x2_t{a.x * b.x, a.y * b.y};
      }
    }
  }

  /// out = round(this * scale).
  SGL_DEVICE void scale_into(RowSlice<T, kPacks>& out, float scale) const {
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
#pragma unroll
      for (int j = 0; j < kWords; ++j) {
        out.pack[k][j] = pack_pair<T>(fp32x2_t{product[k][j].x * scale, product[k][j].y * scale});
      }
    }
  }
};

/// Whether the plan of kGroup-lane row groups (0: the CTA plan) keeps its weight packs in
/// registers: the warp-group plans do; the CTA plan stages them (its rows are long).
template <std::uint32_t kGroup>
inline constexpr bool kWeightInRegisters = kGroup != 0;

/// The weight packs a thread applies to every row it owns (the same packs for each row):
/// kInRegisters: loaded with every batch of rows, right after the rows' own loads (L1 hits after
/// the first batch). Loaded once before the row loop instead, the compiler schedules their
/// conversion ahead of the first rows' loads, which serialises two memory round trips in a
/// decode CTA. Otherwise staged into this thread's shared-memory slots with cp.async once and
/// read back per batch of rows (no registers held while the rows load).
template <typename T, int kPacks, bool kInRegisters>
struct RowWeight {
  RowSlice<T, kPacks> slice;

  /// Before the row loop: starts staging the packs into `slots` (RowSlice::stage); nothing to
  /// do for packs held in registers.
  SGL_DEVICE void stage(const T* weight,
                        std::uint32_t first,
                        std::uint32_t step,
                        std::uint32_t num_packs,
                        Pack* slots,
                        std::uint32_t slot_step) {
    if constexpr (!kInRegisters) {
      RowSlice<T, kPacks>::stage(weight, first, step, num_packs, slots, slot_step);
    }
  }

  /// Each batch of rows, after issuing the rows' loads: loads the packs held in registers.
  SGL_DEVICE void load(const T* weight,
                       std::uint32_t first,
                       std::uint32_t step,
                       std::uint32_t num_packs) {
    if constexpr (kInRegisters) slice.load_unguarded(weight, first, step, num_packs);
  }

  /// Makes `slice` hold the packs: staged ones are read from `slots` once this thread's copies
  /// have landed (call it once per batch of rows, just before the first scale: the wait then
  /// overlaps the first reduction); nothing to do for packs held in registers.
  SGL_DEVICE void ready(const Pack* slots, std::uint32_t slot_step) {
    if constexpr (!kInRegisters) slice.load_staged(slots, slot_step);
  }
};

}  // namespace device::row
