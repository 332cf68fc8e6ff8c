// Losses: row-wise log-sum-exp with the max subtracted; the loss is summed over ids in id order in
// double, so it does not depend on the thread count. The per-id terms (cross-entropy's row
// log-sum-exp minus the label's logit; BCE's row sum over classes) are computed in parallel when
// there are many, then summed in id order: an evaluation over many nodes (a test split of 2.2M
// nodes and 47 classes, PPI's 121 labels) does not pay one core's double exps. Backward passes
// write distinct sorted ids' rows in parallel; repeated ids add into their row serially.
#include "edgeattn/autograd/ops/loss.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "autograd/elementwise.hpp"
#include "edgeattn/core/parallel.hpp"

namespace edgeattn::autograd {
namespace {

// log sum_c exp(x[c]) over one row.
double row_logsumexp(const float* x, int64_t c) {
  float m = x[0];
  for (int64_t k = 1; k < c; ++k) m = std::max(m, x[k]);
  double s = 0.0;
  for (int64_t k = 0; k < c; ++k) s += std::exp(static_cast<double>(x[k]) - m);
  return m + std::log(s);
}

void check_ids(const char* op, std::span<const int64_t> ids, int64_t n) {
  if (ids.empty()) raise<InvalidArgument>(op, ": ids is empty, expected at least one node to average over");
  for (size_t k = 0; k < ids.size(); ++k)
    if (ids[k] < 0 || ids[k] >= n)
      raise<InvalidArgument>(op, ": ids[", k, "] is node ", ids[k], ", expected in [0, ", n, ")");
}

// The label of each id, validated: [ids.size()].
std::vector<int32_t> labels_at(const char* op, std::span<const int32_t> labels, std::span<const int64_t> ids,
                               int64_t n, int64_t classes) {
  if (static_cast<int64_t>(labels.size()) != n)
    raise<ShapeError>(op, ": labels has ", labels.size(), " entries, expected one per node (", n, ")");
  check_ids(op, ids, n);
  std::vector<int32_t> y(ids.size());
  for (size_t k = 0; k < ids.size(); ++k) {
    const int32_t label = labels[static_cast<size_t>(ids[k])];
    if (label < 0 || label >= classes)
      raise<InvalidArgument>(op, ": node ", ids[k], " (ids[", k, "]) has label ", label, ", expected in [0, ",
                             classes, ")", label == -1 ? "; -1 marks an unlabelled node" : "");
    y[k] = label;
  }
  return y;
}

// Work (element exps) below which a loss runs serially: a task costs more than it saves.
constexpr int64_t kParallelExps = 1 << 11;

// Whether n ids of `cost` elements each are worth parallel pieces, and the ids per piece.
bool worth_parallel(int64_t n, int64_t cost) { return n * std::max<int64_t>(cost, 1) >= kParallelExps; }
int64_t ids_per_piece(int64_t cost) {
  return std::max<int64_t>(64, kParallelExps / std::max<int64_t>(cost, 1));
}

// sum_k term(k) over k in [0, n), added in k order in double. The terms are independent: with
// enough work (n * cost element operations) they are computed in parallel into a buffer first,
// so the result is the serial loop's, bit for bit, for any thread count.
template <class Term>
double ordered_sum(int64_t n, int64_t cost, Term&& term) {
  double total = 0.0;
  if (!worth_parallel(n, cost)) {
    for (int64_t k = 0; k < n; ++k) total += term(k);
    return total;
  }
  std::vector<double> terms(static_cast<size_t>(n));
  parallel_for(0, n, ids_per_piece(cost), [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) terms[static_cast<size_t>(k)] = term(k);
  });
  for (const double t : terms) total += t;
  return total;
}

// Whether ids are strictly increasing (a split's sorted node list): then no two ids share a row
// and the backward may write rows in parallel.
bool strictly_increasing(std::span<const int64_t> ids) {
  return std::adjacent_find(ids.begin(), ids.end(), [](int64_t a, int64_t b) { return a >= b; }) == ids.end();
}

// rows(k0, k1) over the ids [0, n) of a loss's backward, each id's row of `cost` elements:
// distinct ids own their rows, so with enough work the pieces run in parallel (any split gives
// the same bits); repeated ids add into a shared row, serially in id order.
template <class Rows>
void for_each_id_row(int64_t n, int64_t cost, bool distinct_rows, Rows&& rows) {
  if (distinct_rows && worth_parallel(n, cost))
    parallel_for(0, n, ids_per_piece(cost), rows);
  else
    rows(0, n);
}

Tensor scalar(double v) {
  Tensor t{Shape()};
  t.data()[0] = static_cast<float>(v);
  return t;
}

}  // namespace

Var log_softmax(Tape& tape, Var x) {
  const Tensor& xv = tape.value(x);
  detail::expect_rank("log_softmax", "x", xv, 2, "[N, C]");
  const int64_t n = xv.dim(0), c = xv.dim(1);
  Tensor y(xv.shape());
  const float* xd = xv.data();
  float* yd = y.data();
  detail::for_each_row_block(n, c, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      if (c == 0) continue;
      const auto lse = static_cast<float>(row_logsumexp(xd + r * c, c));
      for (int64_t k = 0; k < c; ++k) yd[r * c + k] = xd[r * c + k] - lse;
    }
  });
  return tape.record("log_softmax", std::move(y), {x}, [x, n, c](BackwardContext& ctx) {
    if (!ctx.needs_grad(x)) return;
    const float* g = ctx.grad_out().data();
    const float* yd = ctx.out().data();
    float* dx = ctx.grad(x).data();
    detail::for_each_row_block(n, c, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        float s = 0.f;
        for (int64_t k = 0; k < c; ++k) s += g[r * c + k];
        for (int64_t k = 0; k < c; ++k) dx[r * c + k] += g[r * c + k] - std::exp(yd[r * c + k]) * s;
      }
    });
  });
}

Var nll_loss(Tape& tape, Var logp, std::span<const int32_t> labels, std::span<const int64_t> ids) {
  const Tensor& lv = tape.value(logp);
  detail::expect_rank("nll_loss", "logp", lv, 2, "[N, C]");
  const int64_t n = lv.dim(0), c = lv.dim(1);
  auto y = std::make_shared<const std::vector<int32_t>>(labels_at("nll_loss", labels, ids, n, c));
  auto id = std::make_shared<const std::vector<int64_t>>(ids.begin(), ids.end());
  double total = 0.0;
  for (size_t k = 0; k < id->size(); ++k) total -= lv.data()[(*id)[k] * c + (*y)[k]];
  const double count = static_cast<double>(id->size());
  return tape.record("nll_loss", scalar(total / count), {logp},
                     [logp, y, id, c, count](BackwardContext& ctx) {
                       if (!ctx.needs_grad(logp)) return;
                       const auto g = static_cast<float>(ctx.grad_out().data()[0] / count);
                       float* d = ctx.grad(logp).data();
                       for (size_t k = 0; k < id->size(); ++k) d[(*id)[k] * c + (*y)[k]] -= g;
                     });
}

Var cross_entropy(Tape& tape, Var logits, std::span<const int32_t> labels, std::span<const int64_t> ids) {
  const Tensor& xv = tape.value(logits);
  detail::expect_rank("cross_entropy", "logits", xv, 2, "[N, C]");
  const int64_t n = xv.dim(0), c = xv.dim(1);
  auto y = std::make_shared<const std::vector<int32_t>>(labels_at("cross_entropy", labels, ids, n, c));
  auto id = std::make_shared<const std::vector<int64_t>>(ids.begin(), ids.end());
  const float* xd = xv.data();
  const double total = ordered_sum(static_cast<int64_t>(id->size()), c, [&](int64_t k) {
    const float* row = xd + (*id)[static_cast<size_t>(k)] * c;
    return row_logsumexp(row, c) - row[(*y)[static_cast<size_t>(k)]];
  });
  const double count = static_cast<double>(id->size());
  const bool distinct_rows = strictly_increasing(*id);
  return tape.record("cross_entropy", scalar(total / count), {logits},
                     [logits, y, id, c, count, distinct_rows](BackwardContext& ctx) {
                       if (!ctx.needs_grad(logits)) return;
                       const double g = ctx.grad_out().data()[0] / count;
                       const float* x = ctx.value(logits).data();
                       float* d = ctx.grad(logits).data();
                       // d/dx_i = g (softmax(x_i) - onehot(y_i)).
                       auto rows = [&](int64_t k0, int64_t k1) {
                         for (int64_t k = k0; k < k1; ++k) {
                           const int64_t i = (*id)[static_cast<size_t>(k)];
                           const float* row = x + i * c;
                           float* drow = d + i * c;
                           const double lse = row_logsumexp(row, c);
                           for (int64_t j = 0; j < c; ++j)
                             drow[j] += static_cast<float>(g * std::exp(row[j] - lse));
                           drow[(*y)[static_cast<size_t>(k)]] -= static_cast<float>(g);
                         }
                       };
                       for_each_id_row(static_cast<int64_t>(id->size()), c, distinct_rows, rows);
                     });
}

Var bce_with_logits(Tape& tape, Var logits, Var targets, std::span<const int64_t> ids) {
  const Tensor& xv = tape.value(logits);
  const Tensor& tv = tape.value(targets);
  detail::expect_rank("bce_with_logits", "logits", xv, 2, "[N, C]");
  const int64_t n = xv.dim(0), c = xv.dim(1);
  detail::expect_shape("bce_with_logits", "targets", tv, {n, c});
  check_ids("bce_with_logits", ids, n);
  auto id = std::make_shared<const std::vector<int64_t>>(ids.begin(), ids.end());
  const float* xd = xv.data();
  const float* td = tv.data();
  // Each id's row summed in class order, the rows in id order (in parallel when many).
  const double total = ordered_sum(static_cast<int64_t>(id->size()), c, [&](int64_t k) {
    const int64_t i = (*id)[static_cast<size_t>(k)];
    double row = 0.0;
    for (int64_t j = 0; j < c; ++j) {
      const double x = xd[i * c + j], t = td[i * c + j];
      row += std::max(x, 0.0) - x * t + std::log1p(std::exp(-std::fabs(x)));
    }
    return row;
  });
  const double count = static_cast<double>(id->size()) * static_cast<double>(std::max<int64_t>(c, 1));
  const bool distinct_rows = strictly_increasing(*id);
  return tape.record("bce_with_logits", scalar(total / count), {logits, targets},
                     [logits, targets, id, c, count, distinct_rows](BackwardContext& ctx) {
                       const double g = ctx.grad_out().data()[0] / count;
                       const float* x = ctx.value(logits).data();
                       const float* t = ctx.value(targets).data();
                       float* dx = ctx.needs_grad(logits) ? ctx.grad(logits).data() : nullptr;
                       float* dt = ctx.needs_grad(targets) ? ctx.grad(targets).data() : nullptr;
                       auto rows = [&](int64_t k0, int64_t k1) {
                         for (int64_t k = k0; k < k1; ++k) {
                           const int64_t i = (*id)[static_cast<size_t>(k)];
                           for (int64_t j = 0; j < c; ++j) {
                             const double xe = x[i * c + j];
                             const double sig =
                                 xe >= 0 ? 1.0 / (1.0 + std::exp(-xe)) : std::exp(xe) / (1.0 + std::exp(xe));
                             if (dx) dx[i * c + j] += static_cast<float>(g * (sig - t[i * c + j]));
                             if (dt) dt[i * c + j] -= static_cast<float>(g * xe);
                           }
                         }
                       };
                       for_each_id_row(static_cast<int64_t>(id->size()), c, distinct_rows, rows);
                     });
}

}  // namespace edgeattn::autograd
