// A SourceExpansion (autograd/ops/shape.hpp) that one process can run: the sources after a
// part's own rows are copies of some own rows. It stands in for a distributed part's halo in
// tests of the ops and layers that take an expansion (no MPI needed):
//   expand(own [n, ...]) = [own; own[others]]                       -> [n + others.size(), ...]
//   reduce(g [n + k, ...]) = g's first n rows, plus row n + k added to row others[k], in order
//
// Example:
//   const auto halo = edgeattn::testing::repeat_expansion({5, 1, 3});   // 3 halo rows
//   Var x_src = autograd::expand_sources(tape, x_own, halo);            // [n + 3, F]
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "edgeattn/autograd/ops/shape.hpp"

namespace edgeattn::testing {

inline autograd::SourceExpansion repeat_expansion(std::vector<int64_t> others) {
  auto with_rows = [](const Shape& shape, int64_t rows) {
    std::vector<int64_t> dims(shape.dims().begin(), shape.dims().end());
    dims[0] = rows;
    return Tensor(Shape{std::span<const int64_t>(dims)});
  };
  auto expand = [others, with_rows](ConstView own) {
    const int64_t n = own.dim(0), width = n > 0 ? own.numel() / n : 0;
    Tensor out = with_rows(own.shape(), n + static_cast<int64_t>(others.size()));
    std::copy_n(own.data(), own.numel(), out.data());
    for (size_t k = 0; k < others.size(); ++k)
      std::copy_n(own.data() + others[k] * width, width, out.data() + (n + static_cast<int64_t>(k)) * width);
    return out;
  };
  auto reduce = [others, with_rows](ConstView g) {
    const int64_t n = g.dim(0) - static_cast<int64_t>(others.size());
    const int64_t width = g.dim(0) > 0 ? g.numel() / g.dim(0) : 0;
    Tensor out = with_rows(g.shape(), n);
    std::copy_n(g.data(), out.numel(), out.data());
    for (size_t k = 0; k < others.size(); ++k)
      for (int64_t f = 0; f < width; ++f)
        out.data()[others[k] * width + f] += g.data()[(n + static_cast<int64_t>(k)) * width + f];
    return out;
  };
  return {.expand = std::move(expand), .reduce = std::move(reduce)};
}

}  // namespace edgeattn::testing
