#include "edgeattn/autograd/ops/shape.hpp"

#include <cstring>
#include <utility>
#include <vector>

#include "autograd/elementwise.hpp"
#include "autograd/ops/expansion_checks.hpp"

namespace edgeattn::autograd {

Var reshape(Tape& tape, Var x, Shape shape) {
  const Tensor& xv = tape.value(x);
  if (shape.numel() != xv.numel())
    raise<ShapeError>("reshape: x has shape ", xv.shape().str(), " (", xv.numel(),
                      " elements), cannot become ", shape.str(), " (", shape.numel(), " elements)");
  // Recorded values are never written again, so the output shares the input's storage.
  Tensor y = xv.share_reshaped(shape);
  return tape.record("reshape", std::move(y), {x}, [x](BackwardContext& ctx) {
    if (!ctx.needs_grad(x)) return;
    // Shared, not copied: if x's gradient is written again (another consumer of x adds to it),
    // the tape copies it first (Tape::grad_storage), so dy keeps its value.
    ctx.add_grad(x, ctx.grad_out().share_reshaped(ctx.value(x).shape()));
  });
}

Var mean_heads(Tape& tape, Var x) {
  const Tensor& xv = tape.value(x);
  detail::expect_rank("mean_heads", "x", xv, 3, "[N, heads, dim]");
  const int64_t n = xv.dim(0), h = xv.dim(1), d = xv.dim(2);
  if (h < 1) raise<ShapeError>("mean_heads: x has shape ", xv.shape().str(), ", expected at least 1 head");
  Tensor y({n, d});
  const float inv = 1.f / static_cast<float>(h);
  const float* xd = xv.data();
  float* yd = y.data();
  detail::for_each_row_block(n, h * d, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i)
      for (int64_t k = 0; k < h; ++k)
        for (int64_t c = 0; c < d; ++c) yd[i * d + c] += xd[(i * h + k) * d + c];
    for (int64_t i = r0 * d; i < r1 * d; ++i) yd[i] *= inv;
  });
  return tape.record("mean_heads", std::move(y), {x}, [x, n, h, d, inv](BackwardContext& ctx) {
    if (!ctx.needs_grad(x)) return;
    const float* g = ctx.grad_out().data();
    float* dx = ctx.grad(x).data();
    detail::for_each_row_block(n, h * d, [&](int64_t r0, int64_t r1) {
      for (int64_t i = r0; i < r1; ++i)
        for (int64_t k = 0; k < h; ++k)
          for (int64_t c = 0; c < d; ++c) dx[(i * h + k) * d + c] += inv * g[i * d + c];
    });
  });
}

Var concat(Tape& tape, std::initializer_list<Var> xs) {
  if (xs.size() == 0) raise<InvalidArgument>("concat: no inputs");
  std::vector<Var> inputs(xs);
  const Tensor& first = tape.value(inputs[0]);
  if (first.rank() < 1)
    raise<ShapeError>("concat: input 0 has shape ", first.shape().str(), ", expected [..., F]");
  const int last = first.rank() - 1;
  const int64_t rows = first.dim(last) ? first.numel() / first.dim(last) : 0;
  std::vector<int64_t> widths, offsets;
  int64_t total = 0;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Tensor& v = tape.value(inputs[k]);
    bool ok = v.rank() == first.rank();
    for (int d = 0; ok && d < last; ++d) ok = v.dim(d) == first.dim(d);
    if (!ok)
      raise<ShapeError>("concat: input ", k, " has shape ", v.shape().str(),
                        ", expected the leading extents of input 0 ", first.shape().str());
    offsets.push_back(total);
    widths.push_back(v.dim(last));
    total += v.dim(last);
  }
  std::vector<int64_t> dims(first.shape().dims().begin(), first.shape().dims().end());
  dims.back() = total;
  Tensor y{Shape(std::span<const int64_t>(dims))};
  for (size_t k = 0; k < inputs.size(); ++k) {
    const float* src = tape.value(inputs[k]).data();
    const int64_t w = widths[k], off = offsets[k];
    detail::for_each_row_block(rows, w, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)
        std::memcpy(y.data() + r * total + off, src + r * w, sizeof(float) * w);
    });
  }
  // record takes an initializer_list; the backward closure holds the full list.
  Var out =
      tape.record("concat", std::move(y), xs, [inputs, widths, offsets, rows, total](BackwardContext& ctx) {
        const float* g = ctx.grad_out().data();
        for (size_t k = 0; k < inputs.size(); ++k) {
          if (!ctx.needs_grad(inputs[k])) continue;
          float* dx = ctx.grad(inputs[k]).data();
          const int64_t w = widths[k], off = offsets[k];
          detail::for_each_row_block(rows, w, [&](int64_t r0, int64_t r1) {
            for (int64_t r = r0; r < r1; ++r)
              for (int64_t c = 0; c < w; ++c) dx[r * w + c] += g[r * total + off + c];
          });
        }
      });
  return out;
}

Var leading_rows(Tape& tape, Var x, int64_t rows) {
  const Tensor& xv = tape.value(x);
  if (xv.rank() < 1 || rows < 0 || rows > xv.dim(0))
    raise<ShapeError>("leading_rows: x has shape ", xv.shape().str(), ", cannot take its first ", rows,
                      " rows");
  std::vector<int64_t> dims(xv.shape().dims().begin(), xv.shape().dims().end());
  dims[0] = rows;
  const Shape shape{std::span<const int64_t>(dims)};
  Tensor y = Tensor::uninitialized(shape);
  if (shape.numel() > 0) std::memcpy(y.data(), xv.data(), sizeof(float) * static_cast<size_t>(shape.numel()));
  return tape.record("leading_rows", std::move(y), {x}, [x](BackwardContext& ctx) {
    if (!ctx.needs_grad(x)) return;
    const Tensor& g = ctx.grad_out();
    detail::add_into(ctx.grad(x).data(), g.data(), g.numel());  // the first rows of x's gradient
  });
}

namespace detail {

void check_expanded(const char* who, const Shape& own, const Tensor& expanded) {
  bool ok = expanded.rank() == own.rank() && own.rank() >= 1 && expanded.dim(0) >= own.dims()[0];
  for (int64_t d = 1; ok && d < own.rank(); ++d) ok = expanded.dim(d) == own.dims()[static_cast<size_t>(d)];
  if (!ok)
    raise<ShapeError>(who, ": the expansion of rows of shape ", own.str(), " has shape ",
                      expanded.shape().str(),
                      ", expected at least as many rows with the same trailing dimensions");
}

void check_reduced(const char* who, const Shape& own, const Tensor& reduced) {
  if (reduced.shape() != own)
    raise<ShapeError>(who, ": the reduction of the sources' gradient has shape ", reduced.shape().str(),
                      ", expected the own rows' ", own.str());
}

}  // namespace detail

Var expand_sources(Tape& tape, Var own, const SourceExpansion& sources) {
  if (!sources.expand || !sources.reduce)
    raise<InvalidArgument>("expand_sources: the expansion needs both its expand and reduce functions");
  const Shape own_shape = tape.value(own).shape();
  Tensor y = sources.expand(tape.value(own));
  detail::check_expanded("expand_sources", own_shape, y);
  return tape.record("expand_sources", std::move(y), {own}, [own, sources, own_shape](BackwardContext& ctx) {
    // Called needed or not: the reduction may be a collective the other ranks are in.
    Tensor g = sources.reduce(ctx.grad_out());
    detail::check_reduced("expand_sources", own_shape, g);
    ctx.add_grad(own, std::move(g));
  });
}

}  // namespace edgeattn::autograd
