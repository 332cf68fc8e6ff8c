#include "edgeattn/data/splits.hpp"

#include <algorithm>
#include <cmath>
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

// The labelled ids of each class, ascending; InvalidArgument naming `fn` for a label out of range.
std::vector<std::vector<int64_t>> ids_by_class(const Labels& labels, const char* fn) {
  std::vector<std::vector<int64_t>> by_class(static_cast<size_t>(labels.num_classes));
  for (size_t i = 0; i < labels.classes.size(); ++i) {
    const int32_t c = labels.classes[i];
    if (c == -1) continue;
    if (c < 0 || c >= labels.num_classes)
      raise<InvalidArgument>(fn, ": item ", i, " has label ", c, ", expected -1 or [0, ", labels.num_classes,
                             ")");
    by_class[static_cast<size_t>(c)].push_back(static_cast<int64_t>(i));
  }
  return by_class;
}

}  // namespace

Split random_split(const Labels& labels, int64_t per_class, int64_t num_val, int64_t num_test,
                   uint64_t seed) {
  require_single_label(labels, "random_split");
  if (per_class < 0 || num_val < 0 || num_test < 0)
    raise<InvalidArgument>("random_split: per_class = ", per_class, ", num_val = ", num_val,
                           ", num_test = ", num_test, ", expected non-negative counts");
  const auto n = static_cast<int64_t>(labels.classes.size());
  std::vector<std::vector<int64_t>> by_class = ids_by_class(labels, "random_split");
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

std::vector<Split> stratified_kfold(const Labels& labels, int k, double val_fraction, uint64_t seed) {
  require_single_label(labels, "stratified_kfold");
  if (k < 2) raise<InvalidArgument>("stratified_kfold: k = ", k, ", expected >= 2");
  if (!(val_fraction >= 0.0 && val_fraction < 1.0))
    raise<InvalidArgument>("stratified_kfold: val_fraction = ", val_fraction, ", expected in [0, 1)");
  const auto n = static_cast<int64_t>(labels.classes.size());
  std::vector<std::vector<int64_t>> by_class = ids_by_class(labels, "stratified_kfold");
  int64_t labelled = 0;
  for (const auto& v : by_class) labelled += static_cast<int64_t>(v.size());
  if (labelled < k)
    raise<InvalidArgument>("stratified_kfold: ", labelled, " labelled items, fewer than k = ", k);
  // Deal each class, shuffled, round-robin into the folds (continuing where the previous class
  // stopped), so every fold gets each class's share to within one item.
  std::mt19937_64 rng(seed);
  std::vector<int> fold_of(static_cast<size_t>(n), -1);
  int next = 0;
  for (auto& v : by_class) {
    select_prefix(v, v.size(), rng);
    for (const int64_t i : v) {
      fold_of[static_cast<size_t>(i)] = next;
      next = (next + 1) % k;
    }
  }
  std::vector<Split> splits(static_cast<size_t>(k));
  for (int f = 0; f < k; ++f) {
    Split& s = splits[static_cast<size_t>(f)];
    // Validation: val_fraction of each class among the non-test items, drawn with this fold's rng.
    std::mt19937_64 fold_rng(seed ^ (0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(f + 1)));
    for (const auto& v : by_class) {
      std::vector<int64_t> rest;
      for (const int64_t i : v)
        if (fold_of[static_cast<size_t>(i)] == f)
          s.test.push_back(i);
        else
          rest.push_back(i);
      std::sort(rest.begin(), rest.end());
      const auto nval = static_cast<size_t>(std::llround(val_fraction * static_cast<double>(rest.size())));
      select_prefix(rest, nval, fold_rng);
      s.val.insert(s.val.end(), rest.begin(), rest.begin() + static_cast<std::ptrdiff_t>(nval));
      s.train.insert(s.train.end(), rest.begin() + static_cast<std::ptrdiff_t>(nval), rest.end());
    }
    std::sort(s.train.begin(), s.train.end());
    std::sort(s.val.begin(), s.val.end());
    std::sort(s.test.begin(), s.test.end());
  }
  return splits;
}

}  // namespace edgeattn::data
