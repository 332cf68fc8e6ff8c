#include "edgeattn/data/splits.hpp"

#include <algorithm>
#include <random>

#include "edgeattn/core/error.hpp"

namespace edgeattn::data {
namespace {

/// Uniform in [0, n) without modulo bias (see the header for the exact rule).
uint64_t uniform_below(std::mt19937_64& rng, uint64_t n) {
  const uint64_t threshold = (0 - n) % n;  // (2^64 - n) mod n
  while (true) {
    const uint64_t r = rng();
    if (r >= threshold) return r % n;
  }
}

/// The first k of `v` after a partial Fisher-Yates shuffle, left in v[0..k).
void select_prefix(std::vector<int64_t>& v, size_t k, std::mt19937_64& rng) {
  for (size_t i = 0; i < k; ++i) {
    const size_t j = i + static_cast<size_t>(uniform_below(rng, v.size() - i));
    std::swap(v[i], v[j]);
  }
}

void require_single_label(const Labels& labels, const char* fn) {
  if (labels.multi_label())
    raise<InvalidArgument>(fn, ": the labels are multi-label, expected one class per node");
}

}  // namespace

Split random_split(const Labels& labels, int64_t per_class, int64_t num_val, int64_t num_test,
                   uint64_t seed) {
  require_single_label(labels, "random_split");
  if (per_class < 0 || num_val < 0 || num_test < 0)
    raise<InvalidArgument>("random_split: per_class = ", per_class, ", num_val = ", num_val,
                           ", num_test = ", num_test, ", expected non-negative counts");
  const auto n = static_cast<int64_t>(labels.classes.size());
  std::vector<std::vector<int64_t>> by_class(static_cast<size_t>(labels.num_classes));
  for (int64_t i = 0; i < n; ++i) {
    const int32_t c = labels.classes[static_cast<size_t>(i)];
    if (c == -1) continue;
    if (c < 0 || c >= labels.num_classes)
      raise<InvalidArgument>("random_split: node ", i, " has label ", c, ", expected -1 or [0, ",
                             labels.num_classes, ")");
    by_class[static_cast<size_t>(c)].push_back(i);
  }
  std::mt19937_64 rng(seed);
  Split split;
  std::vector<uint8_t> taken(static_cast<size_t>(n), 0);
  for (size_t c = 0; c < by_class.size(); ++c) {
    auto& v = by_class[c];
    if (static_cast<int64_t>(v.size()) < per_class)
      raise<InvalidArgument>("random_split: class ", c, " has ", v.size(),
                             " labelled nodes, fewer than per_class = ", per_class);
    select_prefix(v, static_cast<size_t>(per_class), rng);
    for (size_t k = 0; k < static_cast<size_t>(per_class); ++k) {
      split.train.push_back(v[k]);
      taken[static_cast<size_t>(v[k])] = 1;
    }
  }
  std::vector<int64_t> rest;
  for (int64_t i = 0; i < n; ++i)
    if (labels.classes[static_cast<size_t>(i)] != -1 && !taken[static_cast<size_t>(i)]) rest.push_back(i);
  if (num_val + num_test > static_cast<int64_t>(rest.size()))
    raise<InvalidArgument>("random_split: num_val + num_test = ", num_val + num_test, " but only ",
                           rest.size(), " labelled nodes remain after ", split.train.size(),
                           " training nodes");
  select_prefix(rest, static_cast<size_t>(num_val + num_test), rng);
  split.val.assign(rest.begin(), rest.begin() + num_val);
  split.test.assign(rest.begin() + num_val, rest.begin() + num_val + num_test);
  std::sort(split.train.begin(), split.train.end());
  std::sort(split.val.begin(), split.val.end());
  std::sort(split.test.begin(), split.test.end());
  return split;
}

Split full_split(const Labels& labels, const Split& base) {
  require_single_label(labels, "full_split");
  const auto n = static_cast<int64_t>(labels.classes.size());
  std::vector<uint8_t> held_out(static_cast<size_t>(n), 0);
  for (const auto* part : {&base.val, &base.test}) {
    for (const int64_t v : *part) {
      if (v < 0 || v >= n)
        raise<InvalidArgument>("full_split: node ", v, " of the base split is outside [0, ", n, ")");
      held_out[static_cast<size_t>(v)] = 1;
    }
  }
  Split split{{}, base.val, base.test};
  for (int64_t i = 0; i < n; ++i)
    if (labels.classes[static_cast<size_t>(i)] != -1 && !held_out[static_cast<size_t>(i)])
      split.train.push_back(i);
  return split;
}

}  // namespace edgeattn::data
