// detail::CountingSort: the parallel stable counting sort behind build_graph and the transpose.
#include "graph/counting_sort.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include "edgeattn/core/parallel.hpp"

namespace edgeattn {
namespace {

struct Sorted {
  std::vector<int64_t> start;  // [num_keys + 1]
  std::vector<int64_t> items;  // item ids in sorted order
};

// Sorts items [0, keys.size()) by keys[i], skipping items whose key is negative.
Sorted counting_sort(const std::vector<int64_t>& keys, int64_t num_keys) {
  const auto n = static_cast<int64_t>(keys.size());
  detail::CountingSort sort(n, num_keys, [&](int64_t b, int64_t e, int64_t* count) {
    for (int64_t i = b; i < e; ++i)
      if (keys[static_cast<size_t>(i)] >= 0) ++count[keys[static_cast<size_t>(i)]];
  });
  Sorted out;
  out.items.assign(static_cast<size_t>(sort.num_sorted()), -1);
  sort.scatter([&](int64_t b, int64_t e, int64_t* next) {
    for (int64_t i = b; i < e; ++i)
      if (keys[static_cast<size_t>(i)] >= 0)
        out.items[static_cast<size_t>(next[keys[static_cast<size_t>(i)]]++)] = i;
  });
  out.start = sort.release_key_start();
  return out;
}

// The oracle: std::stable_sort of the kept items by key, and the key offsets by counting.
Sorted stable_sort_oracle(const std::vector<int64_t>& keys, int64_t num_keys) {
  Sorted out;
  out.start.assign(static_cast<size_t>(num_keys) + 1, 0);
  for (size_t i = 0; i < keys.size(); ++i)
    if (keys[i] >= 0) {
      out.items.push_back(static_cast<int64_t>(i));
      ++out.start[static_cast<size_t>(keys[i]) + 1];
    }
  std::stable_sort(out.items.begin(), out.items.end(), [&](int64_t a, int64_t b) {
    return keys[static_cast<size_t>(a)] < keys[static_cast<size_t>(b)];
  });
  std::partial_sum(out.start.begin(), out.start.end(), out.start.begin());
  return out;
}

std::vector<int64_t> random_keys(int64_t n, int64_t num_keys, uint64_t seed, bool with_skips) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> keys(static_cast<size_t>(n));
  for (auto& k : keys) {
    // Skewed: half the items go to the first 1% of keys, like a power-law graph's hubs.
    const int64_t range = rng() % 2 ? std::max<int64_t>(1, num_keys / 100) : num_keys;
    k = static_cast<int64_t>(rng() % static_cast<uint64_t>(range));
    if (with_skips && rng() % 7 == 0) k = -1;
  }
  return keys;
}

TEST(CountingSort, EmptyInputGivesZeroOffsets) {
  const Sorted s = counting_sort({}, 5);
  EXPECT_EQ(s.start, std::vector<int64_t>(6, 0));
  EXPECT_TRUE(s.items.empty());
}

TEST(CountingSort, NoKeysAndNoItemsGivesOneOffset) {
  const Sorted s = counting_sort({}, 0);
  EXPECT_EQ(s.start, std::vector<int64_t>{0});
}

TEST(CountingSort, OffsetsComeFromTheScatterSoAskingFirstIsAnError) {
  detail::CountingSort sort(3, 2, [](int64_t b, int64_t e, int64_t* count) {
    for (int64_t i = b; i < e; ++i) ++count[i % 2];
  });
  EXPECT_EQ(sort.num_sorted(), 3);
  EXPECT_THROW((void)sort.release_key_start(), std::logic_error);
}

TEST(CountingSort, HandWorkedExampleIsStable) {
  //                 item:  0  1  2  3  4  5
  const std::vector<int64_t> keys = {2, 0, 2, -1, 0, 2};
  const Sorted s = counting_sort(keys, 4);
  EXPECT_EQ(s.start, (std::vector<int64_t>{0, 2, 2, 5, 5}));
  EXPECT_EQ(s.items, (std::vector<int64_t>{1, 4, 0, 2, 5}));
}

TEST(CountingSort, SmallInputsMatchStableSort) {
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const int64_t num_keys = 1 + static_cast<int64_t>(seed * 7 % 50);
    const auto keys = random_keys(static_cast<int64_t>(seed * 37), num_keys, seed, seed % 2 == 1);
    const Sorted got = counting_sort(keys, num_keys), want = stable_sort_oracle(keys, num_keys);
    EXPECT_EQ(got.start, want.start) << "seed " << seed;
    EXPECT_EQ(got.items, want.items) << "seed " << seed;
  }
}

TEST(CountingSort, ManyBlocksGiveTheSerialResultForAnyThreadCount) {
  // 600k items over 3k keys: up to 9 blocks of 65536 items, so the thread limit changes how many
  // blocks there are, and the result must not change.
  const int64_t n = 600000, num_keys = 3000;
  const auto keys = random_keys(n, num_keys, 42, true);
  const Sorted want = stable_sort_oracle(keys, num_keys);
  for (int threads : {1, 2, 3, 8}) {
    const ThreadLimit limit(threads);
    const Sorted got = counting_sort(keys, num_keys);
    EXPECT_EQ(got.start, want.start) << threads << " threads";
    EXPECT_EQ(got.items, want.items) << threads << " threads";
  }
}

}  // namespace
}  // namespace edgeattn
