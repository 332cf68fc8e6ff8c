// The packed-weight product (kernels/packed_gemm.hpp) against the serial reference: every row
// count across tile strips (1..MR and beyond), widths below, at and past a panel (padded through
// scratch), k from 1 to the limit, both layouts of B, accumulation, strided A and C; one multiply
// call versus row blocks (bit-identical: each element is one chain over k whatever the blocking).
#include "kernels/packed_gemm.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

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
    for (int64_t n : {1, 15, 16, 17, 64, 100, 256})
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

TEST(PackedRight, SuitsLayerSizedWeightsOnly) {
  EXPECT_TRUE(PackedRight::suits(100, 64));
  EXPECT_TRUE(PackedRight::suits(512, 256));
  EXPECT_FALSE(PackedRight::suits(513, 64));  // Cora's 1433 input features: BLAS
  EXPECT_FALSE(PackedRight::suits(64, 257));
  EXPECT_FALSE(PackedRight::suits(0, 64));
}

}  // namespace
}  // namespace edgeattn::kernels
