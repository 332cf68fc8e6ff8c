// Metrics over a split's nodes. An evaluation of a large graph (ogbn-products' 2.2M test nodes
// of 47 classes, ogbn-proteins' 112 ROC-AUC tasks) reads every logit of every evaluated node, so
// the passes run in parallel: node pieces for the counts (integers: any split gives the same
// sums), classes for ROC-AUC (each class's AUC one task's, summed in class order: the serial
// loop's bits). Nodes and labels are validated first, serially, so an error names the same node
// at any thread count.
#include "edgeattn/train/metrics.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/parallel.hpp"

namespace edgeattn::train {
namespace {

constexpr int64_t kElementGrain = int64_t{1} << 14;  // logits read per parallel piece

// InvalidArgument naming the first of `nodes` outside [0, n).
void check_nodes(const char* metric, std::span<const int64_t> nodes, int64_t n) {
  for (const int64_t i : nodes)
    if (i < 0 || i >= n) raise<InvalidArgument>(metric, ": node ", i, " is outside [0, ", n, ")");
}

// sum over k in [0, count) of counts(k) (N integer counts each), over fixed pieces in parallel;
// `row` is the elements each k reads (it sets the piece size).
template <size_t N, class Counts>
std::array<int64_t, N> sum_counts(int64_t count, int64_t row, Counts&& counts) {
  const int64_t grain = std::max<int64_t>(1, kElementGrain / std::max<int64_t>(row, 1));
  const int64_t pieces = (count + grain - 1) / grain;
  std::vector<std::array<int64_t, N>> partial(static_cast<size_t>(pieces), std::array<int64_t, N>{});
  parallel_for(0, count, grain, [&](int64_t b, int64_t e) {
    std::array<int64_t, N>& mine = partial[static_cast<size_t>(b / grain)];
    for (int64_t k = b; k < e; ++k) {
      const std::array<int64_t, N> c = counts(k);
      for (size_t q = 0; q < N; ++q) mine[q] += c[q];
    }
  });
  std::array<int64_t, N> total{};
  for (const auto& p : partial)
    for (size_t q = 0; q < N; ++q) total[q] += p[q];
  return total;
}

// The first arg-max of a row of c logits (c > 0).
int64_t arg_max(const float* row, int64_t c) {
  int64_t best = 0;
  for (int64_t k = 1; k < c; ++k)
    if (row[k] > row[best]) best = k;
  return best;
}

}  // namespace

std::vector<int32_t> predict_classes(ConstView logits) {
  check_shape("predict_classes: logits", logits, {kAny, kAny});
  const int64_t n = logits.dim(0), c = logits.dim(1);
  std::vector<int32_t> out(static_cast<size_t>(n), -1);
  if (c == 0) return out;
  const float* x = logits.data();
  parallel_for(0, n, std::max<int64_t>(1, kElementGrain / c), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) out[static_cast<size_t>(i)] = static_cast<int32_t>(arg_max(x + i * c, c));
  });
  return out;
}

double accuracy(ConstView logits, std::span<const int32_t> labels, std::span<const int64_t> nodes) {
  check_shape("accuracy: logits", logits, {static_cast<int64_t>(labels.size()), kAny});
  if (nodes.empty()) return 0.0;
  const int64_t n = logits.dim(0), c = logits.dim(1);
  check_nodes("accuracy", nodes, n);
  for (const int64_t i : nodes)
    if (labels[static_cast<size_t>(i)] < 0)
      raise<InvalidArgument>("accuracy: node ", i, " has no label (-1)");
  const float* x = logits.data();
  const auto [correct] = sum_counts<1>(static_cast<int64_t>(nodes.size()), c, [&](int64_t k) {
    const int64_t i = nodes[static_cast<size_t>(k)];
    return std::array<int64_t, 1>{c > 0 && arg_max(x + i * c, c) == labels[static_cast<size_t>(i)]};
  });
  return static_cast<double>(correct) / static_cast<double>(nodes.size());
}

double micro_f1(ConstView logits, ConstView targets, std::span<const int64_t> nodes) {
  check_shape("micro_f1: logits", logits, {kAny, kAny});
  check_shape("micro_f1: targets", targets, {logits.dim(0), logits.dim(1)});
  const int64_t n = logits.dim(0), c = logits.dim(1);
  check_nodes("micro_f1", nodes, n);
  const float* x = logits.data();
  const float* t = targets.data();
  const auto [tp, fp, fn] = sum_counts<3>(static_cast<int64_t>(nodes.size()), c, [&](int64_t r) {
    const int64_t i = nodes[static_cast<size_t>(r)];
    std::array<int64_t, 3> q{};
    for (int64_t k = 0; k < c; ++k) {
      const bool pred = x[i * c + k] > 0.f;
      const bool truth = t[i * c + k] > 0.5f;
      q[0] += pred && truth;
      q[1] += pred && !truth;
      q[2] += !pred && truth;
    }
    return q;
  });
  const int64_t denom = 2 * tp + fp + fn;
  // Nothing positive, predicted or true: 0, as sklearn's f1_score(average="micro") (its
  // zero_division default), so an all-negative validation set never scores as perfect.
  return denom == 0 ? 0.0 : 2.0 * static_cast<double>(tp) / static_cast<double>(denom);
}

double roc_auc(ConstView scores, ConstView targets, std::span<const int64_t> nodes) {
  check_shape("roc_auc: scores", scores, {kAny, kAny});
  check_shape("roc_auc: targets", targets, {scores.dim(0), scores.dim(1)});
  const int64_t n = scores.dim(0), c = scores.dim(1);
  check_nodes("roc_auc", nodes, n);
  // Per class: sort the nodes by score; the AUC is the Mann-Whitney U of the positives' ranks
  // (ties get their average rank, which counts a tied pair as 1/2) over P * N. Classes are
  // independent tasks; their AUCs are summed in class order below.
  enum class Outcome : uint8_t { skipped, scored, nan };
  std::vector<double> auc(static_cast<size_t>(c), 0.0);
  std::vector<Outcome> outcome(static_cast<size_t>(c), Outcome::skipped);
  const auto m = static_cast<int64_t>(nodes.size());
  parallel_for(
      0, c, std::max<int64_t>(1, kElementGrain / std::max<int64_t>(m, 1)), [&](int64_t k0, int64_t k1) {
        std::vector<std::pair<float, bool>> col(nodes.size());
        for (int64_t k = k0; k < k1; ++k) {
          int64_t positives = 0;
          bool nan = false;
          for (size_t r = 0; r < nodes.size(); ++r) {
            const int64_t i = nodes[r];
            col[r] = {scores.data()[i * c + k], targets.data()[i * c + k] > 0.5f};
            positives += col[r].second;
            nan |= std::isnan(col[r].first);
          }
          // A NaN score has no rank (and would break the sort's ordering): the AUC is NaN, which the
          // training loop reports as a diverged run (sklearn's roc_auc_score refuses NaN input).
          if (nan) {
            outcome[static_cast<size_t>(k)] = Outcome::nan;
            continue;
          }
          const int64_t negatives = m - positives;
          if (positives == 0 || negatives == 0) continue;
          std::sort(col.begin(), col.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
          double rank_sum = 0;
          for (size_t lo = 0; lo < col.size();) {
            size_t hi = lo;
            int64_t pos_in_tie = 0;
            while (hi < col.size() && col[hi].first == col[lo].first) pos_in_tie += col[hi++].second;
            const double mean_rank = 0.5 * static_cast<double>(lo + 1 + hi);  // ranks lo+1 .. hi
            rank_sum += mean_rank * static_cast<double>(pos_in_tie);
            lo = hi;
          }
          const double p = static_cast<double>(positives), q = static_cast<double>(negatives);
          auc[static_cast<size_t>(k)] = (rank_sum - p * (p + 1) / 2) / (p * q);
          outcome[static_cast<size_t>(k)] = Outcome::scored;
        }
      });
  double sum = 0;
  int64_t classes = 0;
  for (int64_t k = 0; k < c; ++k) {
    if (outcome[static_cast<size_t>(k)] == Outcome::nan) return std::numeric_limits<double>::quiet_NaN();
    if (outcome[static_cast<size_t>(k)] == Outcome::scored) {
      sum += auc[static_cast<size_t>(k)];
      ++classes;
    }
  }
  if (classes == 0)
    raise<InvalidArgument>("roc_auc: no class has both positive and negative nodes among the ", nodes.size(),
                           " given (ROC-AUC is undefined, as in OGB's Evaluator)");
  return sum / static_cast<double>(classes);
}

double score(const std::string& name, ConstView logits, const data::Labels& labels,
             std::span<const int64_t> nodes) {
  if (name == "accuracy") {
    if (labels.multi_label())
      raise<InvalidArgument>("metric 'accuracy' needs single-label data; these labels are multi-label");
    return accuracy(logits, labels.classes, nodes);
  }
  if (name == "micro_f1" || name == "rocauc") {
    if (!labels.multi_label())
      raise<InvalidArgument>("metric '", name, "' needs multi-label data; these labels are single-label");
    return name == "micro_f1" ? micro_f1(logits, labels.multi_hot, nodes)
                              : roc_auc(logits, labels.multi_hot, nodes);
  }
  raise<InvalidArgument>("unknown metric '", name, "' (known: accuracy, micro_f1, rocauc)");
}

}  // namespace edgeattn::train
