// Tensor (core/tensor.hpp): construction, shape errors, shared reshapes and the storage cache.
#include "edgeattn/core/tensor.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "support/expect_error.hpp"

namespace edgeattn {
namespace {

TEST(Tensor, IsZeroInitialisedAndRowMajor) {
  Tensor t({2, 3});
  for (float v : t.span()) EXPECT_EQ(v, 0.f);
  t(1, 2) = 5.f;
  EXPECT_EQ(t.data()[5], 5.f);
  EXPECT_EQ(t.numel(), 6);
  EXPECT_FALSE(t.absent());
  EXPECT_TRUE(Tensor().absent());
}

TEST(Tensor, CopiesAreDeep) {
  Tensor a({4}, 1.f);
  Tensor b = a;
  b.data()[0] = 7.f;
  EXPECT_EQ(a.data()[0], 1.f);
  EXPECT_NE(a.data(), b.data());
}

TEST(Tensor, ShareReshapedAliasesTheStorageAndOutlivesTheOriginal) {
  Tensor view;
  const float* storage = nullptr;
  {
    Tensor a({2, 6}, std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
    storage = a.data();
    view = a.share_reshaped({3, 2, 2});
    a.data()[4] = 40.f;  // seen through the alias
  }
  EXPECT_EQ(view.data(), storage);
  EXPECT_EQ(view.shape(), (Shape{3, 2, 2}));
  EXPECT_EQ(view(1, 0, 0), 40.f);
  EXPECT_EQ(view(2, 1, 1), 11.f);
  testing::expect_throw_naming<ShapeError>([&] { (void)view.share_reshaped({5}); },
                                           {"share_reshaped", "[3, 2, 2]", "[5]"});
}

TEST(Tensor, ReshapedCopyRejectsAnotherElementCount) {
  const Tensor a({2, 3});
  testing::expect_throw_naming<ShapeError>([&] { (void)a.reshaped({4}); }, {"reshaped", "[2, 3]", "[4]"});
  EXPECT_EQ(a.reshaped({3, 2}).shape(), (Shape{3, 2}));
}

TEST(Tensor, UninitializedHasTheShapeAndOwnStorage) {
  Tensor t = Tensor::uninitialized({16, 1024});
  EXPECT_EQ(t.numel(), 16 * 1024);
  t.fill(2.f);
  EXPECT_EQ(t(15, 1023), 2.f);
  const Tensor empty = Tensor::uninitialized({0, 4});
  EXPECT_FALSE(empty.absent());  // a zero-element tensor is "given", not absent
  EXPECT_TRUE(empty.empty());
}

TEST(TensorCache, ReusesAFreedBlockOfTheSameSizeClass) {
  set_tensor_cache_limit(size_t{64} << 20);  // also enabled under the sanitizers, for this test
  release_tensor_cache();
  const Shape shape{256, 1000};  // 1 MB: cached
  const float* first = nullptr;
  {
    Tensor a(shape);
    first = a.data();
  }
  EXPECT_GE(tensor_cache_stats().cached_bytes, size_t{256} * 1000 * sizeof(float));
  const int64_t hits_before = tensor_cache_stats().hits;
  Tensor b(shape);
  EXPECT_EQ(b.data(), first);
  EXPECT_EQ(tensor_cache_stats().hits, hits_before + 1);
  for (float v : b.span()) ASSERT_EQ(v, 0.f);  // a recycled block is still zero-filled
  EXPECT_EQ(tensor_cache_stats().cached_bytes, size_t{0});
}

TEST(TensorCache, CountsTheStorageInUseAndItsPeak) {
  reset_tensor_peak();
  const size_t base = tensor_cache_stats().in_use_bytes;
  EXPECT_EQ(tensor_cache_stats().peak_in_use_bytes, base);
  const size_t big = size_t{256} * 1000 * sizeof(float), small = 100 * sizeof(float);
  {
    const Tensor a({256, 1000});  // cacheable
    const Tensor b({100});        // below the cache's minimum: counted all the same
    const TensorCacheStats s = tensor_cache_stats();
    EXPECT_GE(s.in_use_bytes, base + big + small);
    EXPECT_LE(s.in_use_bytes, base + big + big / 8 + 64 + small + 64);  // rounded up to a class
    EXPECT_EQ(s.peak_in_use_bytes, s.in_use_bytes);
  }
  const TensorCacheStats after = tensor_cache_stats();
  EXPECT_EQ(after.in_use_bytes, base);  // a cached block is not in use
  EXPECT_GE(after.peak_in_use_bytes, base + big + small);
  reset_tensor_peak();
  EXPECT_EQ(tensor_cache_stats().peak_in_use_bytes, base);
}

TEST(TensorCache, ASlightlySmallerRequestReusesACachedBlock) {
  set_tensor_cache_limit(size_t{64} << 20);
  release_tensor_cache();
  const float* first = nullptr;
  {
    const Tensor a({256, 1000});  // ~1 MB
    first = a.data();
  }
  const int64_t hits = tensor_cache_stats().hits;
  {
    const Tensor b({230, 1000});  // another class, ~10% smaller: a's block serves it
    EXPECT_EQ(b.data(), first);
    EXPECT_EQ(tensor_cache_stats().hits, hits + 1);
    EXPECT_GE(tensor_cache_stats().in_use_bytes, size_t{256} * 1000 * sizeof(float));  // a's capacity
  }
  const int64_t misses = tensor_cache_stats().misses;
  const Tensor c({128, 1000});  // half the size: not served by a's block
  EXPECT_EQ(tensor_cache_stats().hits, hits + 1);
  EXPECT_EQ(tensor_cache_stats().misses, misses + 1);
  release_tensor_cache();
}

TEST(TensorCache, AMissWithinTheHeadroomKeepsTheCachedBlocks) {
  set_tensor_cache_limit(size_t{64} << 20);
  release_tensor_cache();
  ASSERT_LT(tensor_cache_stats().in_use_bytes, size_t{64} << 10);  // the sizes below assume so
  const float* first = nullptr;
  {
    const Tensor a({256, 1000});  // 1 MiB (its size class): the high-water mark
    first = a.data();
  }
  const size_t cached = tensor_cache_stats().cached_bytes;
  ASSERT_GE(cached, size_t{256} * 1000 * sizeof(float));
  {
    // 640 KiB misses (a's block is over a quarter larger), but 1 MiB cached + 640 KiB fits in
    // 1.75 MiB: a's block stays (half above the mark, 1.5 MiB, would have freed it).
    const Tensor b({160, 1024});
    EXPECT_EQ(tensor_cache_stats().cached_bytes, cached);
  }
  const Tensor again({256, 1000});  // served by a's block, not page-faulted anew
  EXPECT_EQ(again.data(), first);
  release_tensor_cache();
}

TEST(TensorCache, AMissBeyondTheHeadroomFreesTheSmallestCachedBlockThatSuffices) {
  set_tensor_cache_limit(size_t{64} << 20);
  release_tensor_cache();
  ASSERT_LT(tensor_cache_stats().in_use_bytes, size_t{16} << 10);  // the sizes below assume so
  {
    const Tensor a({256, 1000});  // 1 MiB
    const Tensor b({64, 1000});   // 256 KiB; both cached when freed (high-water mark 1.25 MiB)
  }
  const size_t both = tensor_cache_stats().cached_bytes;
  ASSERT_GE(both, size_t{320} * 1000 * sizeof(float));
  {
    // 1.25 MiB more (larger than every cached block) would make 2.5 MiB, 320 KiB above
    // 1.75 x 1.25 MiB: the smallest cached block that frees the excess (a's, 1 MiB) goes; b's,
    // too small to, stays.
    const Tensor c({320, 1024});
    EXPECT_LT(tensor_cache_stats().cached_bytes, both - size_t{256} * 1000 * sizeof(float) + 1);
    EXPECT_GE(tensor_cache_stats().cached_bytes, size_t{64} * 1000 * sizeof(float));
  }
  release_tensor_cache();
}

TEST(TensorCache, KeepsNoMoreThanItsLimit) {
  set_tensor_cache_limit(size_t{1} << 20);
  release_tensor_cache();
  { Tensor big({1024, 1024}); }  // 4 MiB > limit: returned to the system
  EXPECT_EQ(tensor_cache_stats().cached_bytes, size_t{0});
  { Tensor small({256, 256}); }  // 256 KiB: kept
  EXPECT_GT(tensor_cache_stats().cached_bytes, size_t{0});
  EXPECT_EQ(tensor_cache_stats().limit_bytes, size_t{1} << 20);
  release_tensor_cache();
  EXPECT_EQ(tensor_cache_stats().cached_bytes, size_t{0});
  set_tensor_cache_limit(0);
  { Tensor small({256, 256}); }
  EXPECT_EQ(tensor_cache_stats().cached_bytes, size_t{0});
}

TEST(TensorCache, SmallTensorsBypassIt) {
  set_tensor_cache_limit(size_t{64} << 20);
  release_tensor_cache();
  const TensorCacheStats before = tensor_cache_stats();
  { Tensor tiny({16, 16}); }
  const TensorCacheStats after = tensor_cache_stats();
  EXPECT_EQ(after.cached_bytes, size_t{0});
  EXPECT_EQ(after.hits + after.misses, before.hits + before.misses);
}

}  // namespace
}  // namespace edgeattn
