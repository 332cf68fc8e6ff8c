// Train/validation/test node splits computed from labels: PyG's random per-class split and the
// "full" supervised split of the Planetoid datasets.
//
//   random_split  PyG `RandomNodeSplit(split="random")` / `Planetoid(split="random")` semantics:
//                 `per_class` training nodes from each class, then `num_val` validation and
//                 `num_test` test nodes from the remaining labelled nodes. Nodes labelled -1 are
//                 never chosen. Deterministic for a seed (algorithm below), but not the same
//                 nodes PyG picks: torch's generator cannot be reproduced here.
//   full_split    PyG `Planetoid(split="full")`: keep `base.val` and `base.test`, train on every
//                 other labelled node.
//
// Random algorithm (stable across platforms and standard libraries): one std::mt19937_64 seeded
// with `seed`; an unbiased bounded draw `uniform(n)` = the first 64-bit output r with
// r >= (2^64 - n) mod n, taken mod n (rejection, no modulo bias); partial Fisher-Yates selection of
// k out of a list v (ascending ids): for i in [0, k): swap(v[i], v[i + uniform(n - i)]). Classes are
// drawn in order 0..num_classes-1, then validation+test in one selection of num_val + num_test
// over the ascending list of labelled non-train nodes (the first num_val go to val). Every
// returned list is sorted.
//
// Example:
//   Split s = edgeattn::data::random_split(ds.labels, /*per_class=*/20, /*num_val=*/500,
//                                          /*num_test=*/1000, /*seed=*/0);
//   s.train.size();   // 20 * num_classes
#pragma once

#include <cstdint>
#include <vector>

#include "edgeattn/data/dataset.hpp"

namespace edgeattn::data {

/// Throws InvalidArgument when the labels are multi-label, a count is negative, a class has
/// fewer than `per_class` nodes (naming the class and its count), or fewer than num_val + num_test
/// labelled nodes remain after training nodes are taken.
Split random_split(const Labels& labels, int64_t per_class, int64_t num_val, int64_t num_test, uint64_t seed);

/// The k-fold protocol of graph classification (Xu et al. 2019; Errica et al. 2020): the labelled
/// items (graphs; nodes work too) of each class are shuffled and dealt round-robin into k folds,
/// so every fold holds each class's share to within one item. Split f tests on fold f; of the
/// other items, val_fraction of each class (rounded) validate and the rest train. Every labelled
/// item is in exactly one test fold; sorted ids; deterministic for a seed. InvalidArgument for
/// multi-label labels, k < 2, fewer labelled items than k, or val_fraction outside [0, 1).
///   auto folds = stratified_kfold(ds.graph_labels, 10, 0.1, 0);   // folds[f].test, .val, .train
std::vector<Split> stratified_kfold(const Labels& labels, int k, double val_fraction, uint64_t seed);

/// train = every node with a label (!= -1) in neither base.val nor base.test; val and test are
/// base's. Throws InvalidArgument when a node id in base is out of range or labels are multi-label.
Split full_split(const Labels& labels, const Split& base);

}  // namespace edgeattn::data
