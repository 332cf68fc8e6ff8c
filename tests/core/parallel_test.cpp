// The parallel wrapper: parallel_for pieces and parallel_find_first.
#include "edgeattn/core/parallel.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <vector>

namespace edgeattn {
namespace {

TEST(ParallelFor, CoversTheRangeInPiecesOfAtMostGrain) {
  std::vector<std::atomic<int>> hits(1000);
  parallel_for(0, 1000, 64, [&](int64_t b, int64_t e) {
    EXPECT_LE(e - b, 64);
    for (int64_t i = b; i < e; ++i) ++hits[static_cast<size_t>(i)];
  });
  for (const auto& h : hits) EXPECT_EQ(h.load(), 1);
}

TEST(ParallelFindFirst, EmptyRangeReturnsEnd) {
  EXPECT_EQ(parallel_find_first(5, 5, 16, [](int64_t) { return true; }), 5);
}

TEST(ParallelFindFirst, NoHitReturnsEnd) {
  EXPECT_EQ(parallel_find_first(0, 100000, 1000, [](int64_t) { return false; }), 100000);
}

TEST(ParallelFindFirst, ReturnsTheSmallestHitForAnyThreadCountAndGrain) {
  // Hits at 70001, 70002 and every index from 90000 on: the answer is 70001 however the pieces
  // and blocks of 256 fall and whichever piece finishes first.
  std::vector<char> hit(200000, 0);
  hit[70001] = hit[70002] = 1;
  for (size_t i = 90000; i < hit.size(); ++i) hit[i] = 1;
  for (int threads : {1, 2, 4})
    for (int64_t grain : {1, 7, 256, 1000, 1 << 16, 1 << 20}) {
      const ThreadLimit limit(threads);
      EXPECT_EQ(parallel_find_first(0, static_cast<int64_t>(hit.size()), grain,
                                    [&](int64_t i) { return hit[static_cast<size_t>(i)] != 0; }),
                70001)
          << threads << " threads, grain " << grain;
    }
}

TEST(ParallelFindFirst, HonoursAnOffsetBegin) {
  EXPECT_EQ(parallel_find_first(10, 20, 3, [](int64_t i) { return i % 4 == 0; }), 12);
  EXPECT_EQ(parallel_find_first(13, 16, 3, [](int64_t i) { return i % 4 == 0; }), 16);
}

}  // namespace
}  // namespace edgeattn
