// The packed-weight product (kernels/packed_gemm.hpp) against the serial reference: every row
// count across tile strips (1..MR and beyond), widths below, at and past a panel (padded through
// scratch), k from 1 to the limit, both layouts of B, accumulation, strided A and C; one multiply
// call versus row blocks (bit-identical: each element is one chain over k whatever the blocking).
// The transposed-product accumulator the same way: both orientations of its held sum, padded
// panels, strided operands, slabs of any length giving the bits of one call.
#include "kernels/packed_gemm.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "kernels/parallel/flash_microkernel.hpp"
#include "kernels/reference/reference_matmul.hpp"
#include "support/test_graphs.hpp"

namespace edgeattn::kernels {
namespace {

using edgeattn::testing::random_tensor;

// c [rows, n] with row stride ldc > n: the columns past n must stay untouched.
struct Strided {
  int64_t rows, n, ld;
  std::vector<float> data;
  Strided(int64_t r, int64_t w, uint64_t seed)
      : rows(r), n(w), ld(w + 3), data(static_cast<size_t>(r * (w + 3))) {
    const Tensor t = random_tensor({r, w + 3}, seed);
    std::copy_n(t.data(), t.numel(), data.begin());
  }
  Tensor dense() const {
    Tensor t({rows, n});
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t x = 0; x < n; ++x) t.data()[r * n + x] = data[static_cast<size_t>(r * ld + x)];
    return t;
  }
};

TEST(PackedRight, MatchesReferenceForEveryShapeAndLayout) {
  for (int64_t k : {1, 7, 64, 100, 512})
    for (int64_t n : {1, 15, 16, 17, 47, 64, 100, 256})
      for (int64_t rows : {1, 5, 6, 13, 40})
        for (bool trans_b : {false, true})
          for (bool accumulate : {false, true}) {
            SCOPED_TRACE(::testing::Message() << "k=" << k << " n=" << n << " rows=" << rows
                                              << " trans_b=" << trans_b << " accumulate=" << accumulate);
            const int64_t lda = k + 5;  // strided A: columns past k are never read
            const Tensor a_full = random_tensor({rows, lda}, 1);
            Tensor a({rows, k});
            for (int64_t r = 0; r < rows; ++r)
              for (int64_t x = 0; x < k; ++x) a.data()[r * k + x] = a_full.data()[r * lda + x];
            const Tensor b = trans_b ? random_tensor({n, k}, 2) : random_tensor({k, n}, 2);
            Strided c(rows, n, 3);
            Tensor want = c.dense();
            reference_matmul(a, false, b, trans_b, want, accumulate);
            const std::vector<float> before = c.data;

            const PackedRight right(b.data(), trans_b ? k : n, trans_b, k, n);
            std::vector<float> scratch(static_cast<size_t>(right.scratch_floats(rows)));
            right.multiply(rows, a_full.data(), lda, c.data.data(), c.ld, accumulate, scratch.data());
            EXPECT_LE(max_abs_diff(c.dense(), want), 1e-5f * static_cast<float>(k + 1));
            for (int64_t r = 0; r < rows; ++r)
              for (int64_t x = n; x < c.ld; ++x) ASSERT_EQ(c.data[r * c.ld + x], before[r * c.ld + x]);
          }
}

TEST(PackedRight, RowBlocksGiveTheBitsOfOneCall) {
  const int64_t rows = 97, k = 100, n = 40;
  const Tensor a = random_tensor({rows, k}, 4), w = random_tensor({n, k}, 5);
  const PackedRight right(w.data(), k, true, k, n);
  std::vector<float> scratch(static_cast<size_t>(right.scratch_floats(rows)));
  Tensor whole({rows, n}), blocks({rows, n});
  right.multiply(rows, a.data(), k, whole.data(), n, false, scratch.data());
  for (int64_t r0 = 0; r0 < rows; r0 += 11)  // blocks that start inside tile strips
    right.multiply(std::min<int64_t>(11, rows - r0), a.data() + r0 * k, k, blocks.data() + r0 * n, n, false,
                   scratch.data());
  for (int64_t i = 0; i < whole.numel(); ++i) ASSERT_EQ(whole.data()[i], blocks.data()[i]) << i;
}

// The wide and narrow tiles (flash::WideTile, 6 x 64, and flash::NarrowTile, 12 x 16, on AVX-512:
// taken above for n = 47, 64, 100, 256 and n = 1, 15, 16) and the policy's own tile compute every
// element as the same chain of FMAs over k: the same bits.
template <class Tile>
void expect_the_policy_tiles_bits() {
  using P = flash::Best;
  constexpr int64_t kNR = flash::kPanel<P>, kTileNR = int64_t{Tile::kVecs} * P::kLanes;
  const int64_t rows = 37, k = 100, n = 128;  // n: whole panels of either width
  static_assert(n % kTileNR == 0 && n % kNR == 0);
  const Tensor a = random_tensor({rows, k}, 11), b = random_tensor({k, n}, 12);
  for (bool accumulate : {false, true}) {
    SCOPED_TRACE(::testing::Message() << "accumulate=" << accumulate);
    Tensor policy = random_tensor({rows, n}, 13), tile = policy;  // a deep copy
    if (accumulate) {
      flash::gemm_tile<P, true>(rows, n, k, a.data(), k, 1, b.data(), n, kNR, policy.data(), n);
      flash::gemm_tile<P, true, Tile::kRows, Tile::kVecs>(rows, n, k, a.data(), k, 1, b.data(), n, kTileNR,
                                                          tile.data(), n);
    } else {
      flash::gemm_tile<P, false>(rows, n, k, a.data(), k, 1, b.data(), n, kNR, policy.data(), n);
      flash::gemm_tile<P, false, Tile::kRows, Tile::kVecs>(rows, n, k, a.data(), k, 1, b.data(), n, kTileNR,
                                                           tile.data(), n);
    }
    EXPECT_EQ(std::memcmp(policy.data(), tile.data(), sizeof(float) * static_cast<size_t>(policy.numel())),
              0);
    // and both are the reference product to rounding
    Tensor want = accumulate ? random_tensor({rows, n}, 13) : Tensor({rows, n});
    reference_matmul(a, false, b, false, want, accumulate);
    EXPECT_LE(max_abs_diff(tile, want), 1e-5f * static_cast<float>(k + 1));
  }
}

TEST(PackedRight, WideTileGivesThePolicyTilesBits) {
  expect_the_policy_tiles_bits<flash::WideTile<flash::Best>>();
}

TEST(PackedRight, NarrowTileGivesThePolicyTilesBits) {
  expect_the_policy_tiles_bits<flash::NarrowTile<flash::Best>>();
}

TEST(PackedRight, SuitsLayerSizedWeightsOnly) {
  EXPECT_TRUE(PackedRight::suits(100, 64));
  EXPECT_TRUE(PackedRight::suits(512, 256));
  EXPECT_FALSE(PackedRight::suits(513, 64));  // Cora's 1433 input features: BLAS
  EXPECT_FALSE(PackedRight::suits(64, 257));
  EXPECT_FALSE(PackedRight::suits(0, 64));
}

// a [k, m] and b [k, n] with row strides past their widths (never read there).
struct TransposeOperands {
  int64_t k, m, n, lda, ldb;
  Tensor a, b;  // the strided storage
  TransposeOperands(int64_t rows, int64_t m_, int64_t n_, uint64_t seed)
      : k(rows),
        m(m_),
        n(n_),
        lda(m_ + 2),
        ldb(n_ + 7),
        a(random_tensor({rows, m_ + 2}, seed)),
        b(random_tensor({rows, n_ + 7}, seed + 1)) {}
  Tensor dense(const Tensor& t, int64_t width) const {
    Tensor d({k, width});
    for (int64_t r = 0; r < k; ++r)
      for (int64_t x = 0; x < width; ++x) d.data()[r * width + x] = t.data()[r * t.dim(1) + x];
    return d;
  }
};

TEST(TransposeAccumulator, MatchesReferenceForEveryShape) {
  // m and n below, at and past a panel, and both whole panels, neither, or one of them (the
  // accumulator holds C or C^T accordingly); k across the internal slab length.
  for (int64_t k : {1, 13, 255, 256, 257, 700})
    for (int64_t m : {1, 5, 31, 32, 64, 100})
      for (int64_t n : {1, 12, 33, 64, 100, 512})
        for (bool accumulate : {false, true}) {
          SCOPED_TRACE(::testing::Message()
                       << "k=" << k << " m=" << m << " n=" << n << " accumulate=" << accumulate);
          const TransposeOperands o(k, m, n, 11);
          Strided c(m, n, 13);
          Tensor want = c.dense();
          reference_matmul(o.dense(o.a, m), true, o.dense(o.b, n), false, want, accumulate);
          const std::vector<float> before = c.data;

          TransposeAccumulator acc(m, n);
          acc.add(k, o.a.data(), o.lda, o.b.data(), o.ldb);
          acc.write(c.data.data(), c.ld, accumulate);
          EXPECT_LE(max_abs_diff(c.dense(), want), 1e-5f * static_cast<float>(k + 1));
          for (int64_t r = 0; r < m; ++r)
            for (int64_t x = n; x < c.ld; ++x) ASSERT_EQ(c.data[r * c.ld + x], before[r * c.ld + x]);
        }
}

TEST(TransposeAccumulator, SlabsGiveTheBitsOfOneCallAndResetStartsOver) {
  for (const auto& [m, n] : {std::pair<int64_t, int64_t>{64, 100}, {100, 64}, {47, 33}}) {
    SCOPED_TRACE(::testing::Message() << "m=" << m << " n=" << n);
    const TransposeOperands o(600, m, n, 21);
    TransposeAccumulator whole(m, n), slabs(m, n);
    whole.add(o.k, o.a.data(), o.lda, o.b.data(), o.ldb);
    slabs.add(3, o.a.data(), o.lda, o.b.data(), o.ldb);  // a sum to throw away
    slabs.reset();
    for (int64_t r0 = 0; r0 < o.k; r0 += 131)  // uneven slabs that cross the internal slab length
      slabs.add(std::min<int64_t>(131, o.k - r0), o.a.data() + r0 * o.lda, o.lda, o.b.data() + r0 * o.ldb,
                o.ldb);
    Tensor x({m, n}), y({m, n});
    whole.write(x.data(), n, false);
    slabs.write(y.data(), n, false);
    for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(x.data()[i], y.data()[i]) << i;
  }
}

TEST(TransposeAccumulator, RejectsSumsTooLargeForIt) {
  EXPECT_TRUE(TransposeAccumulator::suits(64, 100));
  EXPECT_TRUE(TransposeAccumulator::suits(512, 512));
  EXPECT_FALSE(TransposeAccumulator::suits(64, 1433));  // Cora's input width: BLAS
  EXPECT_FALSE(TransposeAccumulator::suits(0, 64));
  EXPECT_THROW(TransposeAccumulator(64, 513), InvalidArgument);
}

}  // namespace
}  // namespace edgeattn::kernels
