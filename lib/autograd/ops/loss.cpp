// Losses: row-wise log-sum-exp with the max subtracted; the loss is summed over ids serially in
// double (ids are few: the training nodes), so it does not depend on the thread count.
#include "edgeattn/autograd/ops/loss.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "autograd/elementwise.hpp"

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
  double total = 0.0;
  for (size_t k = 0; k < id->size(); ++k) {
    const float* row = xv.data() + (*id)[k] * c;
    total += row_logsumexp(row, c) - row[(*y)[k]];
  }
  const double count = static_cast<double>(id->size());
  return tape.record("cross_entropy", scalar(total / count), {logits},
                     [logits, y, id, c, count](BackwardContext& ctx) {
                       if (!ctx.needs_grad(logits)) return;
                       const double g = ctx.grad_out().data()[0] / count;
                       const float* xd = ctx.value(logits).data();
                       float* d = ctx.grad(logits).data();
                       // d/dx_i = g (softmax(x_i) - onehot(y_i)); ids may repeat, so rows are visited
                       // serially.
                       for (size_t k = 0; k < id->size(); ++k) {
                         const float* row = xd + (*id)[k] * c;
                         float* drow = d + (*id)[k] * c;
                         const double lse = row_logsumexp(row, c);
                         for (int64_t j = 0; j < c; ++j)
                           drow[j] += static_cast<float>(g * std::exp(row[j] - lse));
                         drow[(*y)[k]] -= static_cast<float>(g);
                       }
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
  double total = 0.0;
  for (const int64_t i : *id)
    for (int64_t j = 0; j < c; ++j) {
      const double x = xv.data()[i * c + j], t = tv.data()[i * c + j];
      total += std::max(x, 0.0) - x * t + std::log1p(std::exp(-std::fabs(x)));
    }
  const double count = static_cast<double>(id->size()) * static_cast<double>(std::max<int64_t>(c, 1));
  return tape.record("bce_with_logits", scalar(total / count), {logits, targets},
                     [logits, targets, id, c, count](BackwardContext& ctx) {
                       const double g = ctx.grad_out().data()[0] / count;
                       const float* xd = ctx.value(logits).data();
                       const float* td = ctx.value(targets).data();
                       float* dx = ctx.needs_grad(logits) ? ctx.grad(logits).data() : nullptr;
                       float* dt = ctx.needs_grad(targets) ? ctx.grad(targets).data() : nullptr;
                       for (const int64_t i : *id)
                         for (int64_t j = 0; j < c; ++j) {
                           const double x = xd[i * c + j];
                           const double sig =
                               x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x));
                           if (dx) dx[i * c + j] += static_cast<float>(g * (sig - td[i * c + j]));
                           if (dt) dt[i * c + j] -= static_cast<float>(g * x);
                         }
                     });
}

}  // namespace edgeattn::autograd
