// Parallel stable counting sort, the shared step of every CSR construction in the graph layer
// (build_graph scatters candidate edges by destination, Graph::transpose scatters edges by source).
//
// Items [0, num_items) are cut into B contiguous blocks. Each block counts its keys into a private
// histogram; one pass over the keys turns the B histograms into per-block write cursors, block b's
// cursor for key k starting after the items of key k in blocks 0..b-1; then every block scatters
// its items in item order. Items with equal keys therefore land in item order whatever B is, so the
// result is the serial stable counting sort's, bit for bit, for any thread count. B grows with the
// work (items per key) and the threads available, never so far that the histograms
// (B x num_keys x 8 bytes) outgrow the items themselves.
//
// The key offsets cost no array of their own: the last block's cursors sit at the front of the
// cursor array, behind one zero, and once every block has scattered they hold the offset at which
// the next key starts. With one block (one thread, or few items per key) the cursor array *is* the
// offset array; with more, its first num_keys + 1 entries are copied out. For graphs with more
// nodes than edges, the offset-sized arrays are most of the memory a build touches.
//
// Usage (key(i) in [0, num_keys); an item may also be skipped by both callbacks):
//   detail::CountingSort sort(n, num_keys, [&](int64_t b, int64_t e, int64_t* count) {
//     for (int64_t i = b; i < e; ++i) ++count[key(i)];
//   });
//   std::vector<T> out(sort.num_sorted());
//   sort.scatter([&](int64_t b, int64_t e, int64_t* next) {
//     for (int64_t i = b; i < e; ++i) out[next[key(i)]++] = item(i);
//   });
//   std::vector<int64_t> start = sort.release_key_start();  // [num_keys + 1], after scatter
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "core/huge_pages.hpp"
#include "edgeattn/core/parallel.hpp"

namespace edgeattn::detail {

class CountingSort {
 public:
  /// Counts: `count(begin, end, count)` adds one to count[key] for every item of [begin, end) that
  /// takes part. Afterwards num_sorted() is known.
  template <class Count>
  CountingSort(int64_t num_items, int64_t num_keys, Count&& count)
      : num_items_(num_items), num_keys_(num_keys) {
    // A block needs about as many items as there are keys to pay for its histogram passes.
    constexpr int64_t kMinItemsPerBlock = int64_t{1} << 16;
    constexpr int64_t kMaxBlocks = 64;
    const int64_t per_block = std::max(num_keys, kMinItemsPerBlock);
    blocks_ = std::clamp<int64_t>(std::min<int64_t>(num_items / per_block, max_threads()), 1, kMaxBlocks);
    block_items_ = (num_items + blocks_ - 1) / blocks_;
    const auto keys = static_cast<size_t>(num_keys);

    // block_cursor(b)[k]: block b's count of key k, then its next write position for k. Blocks lie
    // in reverse order behind cursor_[0] = 0, so the last block's cursors end as the offsets.
    cursor_ = huge_page_vector<int64_t>(static_cast<size_t>(blocks_) * keys + 1);
    for_each_block([&](int64_t b, int64_t begin, int64_t end) { count(begin, end, block_cursor(b)); });

    // One pass over the keys turns the counts into the blocks' first write positions (O(B x keys),
    // serial: it streams through memory once and is small next to the count and the scatter).
    int64_t position = 0;
    for (int64_t k = 0; k < num_keys; ++k) {
      for (int64_t b = 0; b < blocks_; ++b) {
        int64_t& slot = block_cursor(b)[k];
        const int64_t n = slot;
        slot = position;
        position += n;
      }
    }
    num_sorted_ = position;
  }

  /// How many items were counted.
  int64_t num_sorted() const { return num_sorted_; }

  /// Places the items: `scatter(begin, end, next)` visits the counted items of [begin, end) in
  /// order and puts each at position next[key]++. Call once.
  template <class Scatter>
  void scatter(Scatter&& scatter) {
    for_each_block([&](int64_t b, int64_t begin, int64_t end) { scatter(begin, end, block_cursor(b)); });
    scattered_ = true;
  }

  /// [num_keys + 1]: the items of key k went to [start[k], start[k + 1]). Call once, after scatter
  /// (the offsets are the cursors the scatter leaves behind).
  std::vector<int64_t> release_key_start() {
    if (!scattered_) throw std::logic_error("CountingSort::release_key_start called before scatter");
    if (blocks_ > 1) {
      std::vector<int64_t> start;
      huge_page_reserve(start, static_cast<size_t>(num_keys_) + 1);
      start.assign(cursor_.begin(), cursor_.begin() + num_keys_ + 1);
      cursor_ = {};
      return start;
    }
    return std::move(cursor_);
  }

 private:
  int64_t* block_cursor(int64_t b) { return cursor_.data() + 1 + (blocks_ - 1 - b) * num_keys_; }
  template <class F>
  void for_each_block(F&& f) {
    parallel_for(0, blocks_, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) f(b, b * block_items_, std::min(num_items_, (b + 1) * block_items_));
    });
  }

  int64_t num_items_, num_keys_;
  int64_t blocks_ = 1, block_items_ = 0;
  int64_t num_sorted_ = 0;
  bool scattered_ = false;
  std::vector<int64_t> cursor_;  // [1 + blocks_ x num_keys]
};

}  // namespace edgeattn::detail
