#include "edgeattn/nn/prepare_graph.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <numeric>
#include <string>
#include <vector>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/parallel.hpp"
#include "edgeattn/graph/build.hpp"
#include "graph/trusted_csr.hpp"

namespace edgeattn::nn {

namespace {

// The prepared graph, and for each of its CSR edges the CSR edge of `graph` it came from (-1 for
// an added self-loop; empty without add_self_loops).
struct Rebuilt {
  Graph graph;
  std::vector<int64_t> origin;
};

// Bipartite (PyG): destination i is source i for i < min(N_dst, N_src), as in a sampled block
// whose destinations come first among its sources. Each row drops its self-loops and gets one at
// its sorted place, written straight from the CSR, rows in parallel: a sampled step prepares
// three blocks of ~1M edges, and the general builder (a counting sort of an edge list) made that
// a tenth of the step. The result is build_graph's over the list "the given non-loop edges in CSR
// order, then the loops of 0, 1, ..." with SelfLoops::keep and Duplicates::keep, input maps
// included (rows sorted by source, ties in list order; tests/nn/bipartite_conv_test compares the two).
Rebuilt with_bipartite_loops(const Graph& graph, InputOrder order, bool want_origin) {
  const int64_t nd = graph.num_dst(), ns = graph.num_src(), loops = std::min(nd, ns);
  const auto row_ptr = graph.row_ptr();
  const auto col = graph.col_idx();
  constexpr int64_t kRows = 4096;  // rows per parallel piece
  // kept_before[i]: the list index of row i's first kept edge; out_ptr: the new row offsets.
  std::vector<int64_t> kept_before(static_cast<size_t>(nd) + 1, 0), out_ptr(static_cast<size_t>(nd) + 1, 0);
  parallel_for(0, nd, kRows, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      int64_t kept = 0;
      for (int64_t q = row_ptr[size_t(i)]; q < row_ptr[size_t(i) + 1]; ++q) kept += col[size_t(q)] != i;
      kept_before[size_t(i) + 1] = kept;
      out_ptr[size_t(i) + 1] = kept + (i < loops ? 1 : 0);
    }
  });
  std::partial_sum(kept_before.begin(), kept_before.end(), kept_before.begin());
  std::partial_sum(out_ptr.begin(), out_ptr.end(), out_ptr.begin());
  const int64_t kept = kept_before.back(), edges = out_ptr.back();
  // The maps (16 bytes an edge) and the origins (8) are written only when asked for: a sampled
  // step prepares its blocks every step, and a training step reads neither.
  const bool maps = order == InputOrder::keep;
  std::vector<int32_t> out_col(static_cast<size_t>(edges));
  std::vector<int64_t> input_of_csr(maps ? static_cast<size_t>(edges) : 0),
      csr_of_input(maps ? static_cast<size_t>(kept + loops) : 0);
  Rebuilt r;
  r.origin.resize(want_origin ? static_cast<size_t>(edges) : 0);
  parallel_for(0, nd, kRows, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      int64_t out = out_ptr[size_t(i)], listed = kept_before[size_t(i)];
      auto emit = [&](int32_t source, int64_t list_index, int64_t origin) {
        out_col[size_t(out)] = source;
        if (maps) {
          input_of_csr[size_t(out)] = list_index;
          csr_of_input[size_t(list_index)] = out;
        }
        if (want_origin) r.origin[size_t(out)] = origin;
        ++out;
      };
      bool loop_pending = i < loops;
      for (int64_t q = row_ptr[size_t(i)]; q < row_ptr[size_t(i) + 1]; ++q) {
        const int32_t c = col[size_t(q)];
        if (c == i) continue;
        if (loop_pending && c > i) {
          emit(static_cast<int32_t>(i), kept + i, -1);
          loop_pending = false;
        }
        emit(c, listed++, q);
      }
      if (loop_pending) emit(static_cast<int32_t>(i), kept + i, -1);
    }
  });
  r.graph = detail::TrustedCsr::make(nd, ns, std::move(out_ptr), std::move(out_col), std::move(input_of_csr),
                                     std::move(csr_of_input));
  return r;
}

// The square graph with one self-loop per node (build_graph's SelfLoops::add), and, if asked for,
// each CSR edge's origin (8 bytes an edge: 81 MB on a 1M-node, 10M-edge graph; only edge
// attributes read it).
Rebuilt with_square_loops(const Graph& graph, bool want_origin) {
  const auto row_ptr = graph.row_ptr();
  const auto col = graph.col_idx();
  std::vector<int32_t> src(col.begin(), col.end()), dst(col.size());
  for (int64_t i = 0; i < graph.num_dst(); ++i)
    for (int64_t e = row_ptr[static_cast<size_t>(i)]; e < row_ptr[static_cast<size_t>(i) + 1]; ++e)
      dst[static_cast<size_t>(e)] = static_cast<int32_t>(i);
  Rebuilt r;
  r.graph = build_graph(graph.num_dst(), graph.num_src(), std::span<const int32_t>(src),
                        std::span<const int32_t>(dst),
                        {.self_loops = SelfLoops::add, .duplicates = Duplicates::keep});
  if (want_origin) {  // the list given to build_graph is the CSR itself: input edge k is CSR edge k
    const auto input_of_csr = r.graph.input_edge_of_csr();
    r.origin.assign(input_of_csr.begin(), input_of_csr.end());
  }
  return r;
}

// want_origin: fill Rebuilt::origin (with add_self_loops; edge attributes need it).
Rebuilt rebuild(const Graph& graph, bool add_self_loops, InputOrder order, bool want_origin) {
  Rebuilt r = !add_self_loops                      ? Rebuilt{graph, {}}
              : graph.num_dst() == graph.num_src() ? with_square_loops(graph, want_origin)
                                                   : with_bipartite_loops(graph, order, want_origin);
  if (order == InputOrder::drop) r.graph = r.graph.with_input_maps({}, {});
  // The transpose is left to the first backward, which builds it together with its edge ids
  // when it needs both (Graph::transpose_edges): one sort instead of two, and none for a graph
  // that only runs forward (evaluation).
  (void)r.graph.partition();
  (void)r.graph.degree_stats();
  return r;
}

// fill of node i's in-edges other than self-loops, into out [edge_dim].
void fill_loop(const Graph& graph, ConstView attr, const FillValue& fill, int64_t i, float* out) {
  const int64_t f = attr.dim(1);
  if (fill.kind == FillValue::Kind::constant) {
    for (int64_t c = 0; c < f; ++c) out[c] = fill.value.size() == 1 ? fill.value[0] : fill.value[size_t(c)];
    return;
  }
  const auto row_ptr = graph.row_ptr();
  const auto col = graph.col_idx();
  std::vector<double> acc(static_cast<size_t>(f), fill.kind == FillValue::Kind::mul ? 1.0 : 0.0);
  int64_t count = 0;
  for (int64_t e = row_ptr[size_t(i)]; e < row_ptr[size_t(i) + 1]; ++e) {
    if (col[size_t(e)] == i) continue;
    const float* a = attr.data() + e * f;
    for (int64_t c = 0; c < f; ++c) {
      double& x = acc[size_t(c)];
      switch (fill.kind) {
        case FillValue::Kind::mean:
        case FillValue::Kind::sum:
          x += a[c];
          break;
        case FillValue::Kind::max:
          x = count == 0 ? a[c] : std::max<double>(x, a[c]);
          break;
        case FillValue::Kind::min:
          x = count == 0 ? a[c] : std::min<double>(x, a[c]);
          break;
        case FillValue::Kind::mul:
          x *= a[c];
          break;
        case FillValue::Kind::constant:
          break;
      }
    }
    ++count;
  }
  for (int64_t c = 0; c < f; ++c) {
    double x = acc[size_t(c)];
    // PyG scatters into zeros (mean, sum, max, min) or, for mul, into ones with include_self: a node
    // without in-edges keeps that start value.
    if (count == 0) x = fill.kind == FillValue::Kind::mul ? 1.0 : 0.0;
    if (fill.kind == FillValue::Kind::mean && count > 0) x /= double(count);
    out[c] = static_cast<float>(x);
  }
}

}  // namespace

FillValue FillValue::parse(const std::string& text) {
  if (text == "mean") return {Kind::mean, {}};
  if (text == "add" || text == "sum") return {Kind::sum, {}};
  if (text == "max") return {Kind::max, {}};
  if (text == "min") return {Kind::min, {}};
  if (text == "mul") return {Kind::mul, {}};
  size_t used = 0;
  float v = 0.f;
  try {
    v = std::stof(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(v))
    raise<InvalidArgument>("fill_value is '", text,
                           "', expected mean, add, sum, max, min, mul or a finite number");
  return constant(v);
}

Graph prepare_graph(const Graph& graph, bool add_self_loops, InputOrder order) {
  return rebuild(graph, add_self_loops, order, /*want_origin=*/false).graph;
}

PreparedGraph prepare_graph(const Graph& graph, bool add_self_loops, ConstView edge_attr,
                            const FillValue& fill, InputOrder order) {
  if (edge_attr.rank() != 2 || edge_attr.dim(0) != graph.num_edges())
    raise<ShapeError>("prepare_graph: edge_attr has shape ", edge_attr.shape().str(),
                      ", expected [num_edges=", graph.num_edges(), ", edge_dim] in the graph's CSR order");
  const int64_t f = edge_attr.dim(1);
  if (fill.kind == FillValue::Kind::constant && fill.value.size() != 1 &&
      static_cast<int64_t>(fill.value.size()) != f)
    raise<InvalidArgument>("prepare_graph: fill_value has ", fill.value.size(),
                           " values, expected 1 or edge_dim=", f);
  Rebuilt r = rebuild(graph, add_self_loops, order, /*want_origin=*/true);
  PreparedGraph out{std::move(r.graph), {}};
  out.edge_attr = Tensor::uninitialized({out.graph.num_edges(), f});
  if (!add_self_loops) {
    std::copy_n(edge_attr.data(), edge_attr.numel(), out.edge_attr.data());
    return out;
  }
  const auto row_ptr = out.graph.row_ptr();
  for (int64_t i = 0; i < out.graph.num_dst(); ++i)
    for (int64_t e = row_ptr[size_t(i)]; e < row_ptr[size_t(i) + 1]; ++e) {
      float* row = out.edge_attr.data() + e * f;
      const int64_t from = r.origin[size_t(e)];
      if (from >= 0)
        std::copy_n(edge_attr.data() + from * f, f, row);
      else
        fill_loop(graph, edge_attr, fill, i, row);
    }
  return out;
}

bool has_one_self_loop_per_node(const Graph& graph) {
  if (graph.num_dst() != graph.num_src()) return false;
  for (int64_t i = 0; i < graph.num_dst(); ++i) {
    int loops = 0;
    for (int32_t j : graph.row(i)) loops += j == i;
    if (loops != 1) return false;
  }
  return true;
}

void check_edge_features(const autograd::Tape& tape, const std::string& who, const Graph& graph,
                         const EdgeFeatures& edges, int64_t edge_dim, const char* option) {
  if (edge_dim <= 0)
    raise<InvalidArgument>(who, ": edge attributes were given but the layer has no edge_dim (build it with ",
                           option, " = the attributes' width)");
  const Tensor& attr = tape.value(edges.attr);
  if (attr.rank() != 2 || attr.dim(0) != graph.num_edges() || attr.dim(1) != edge_dim)
    raise<ShapeError>(
        who, ": edge attributes have shape ", attr.shape().str(), ", expected [num_edges=", graph.num_edges(),
        ", edge_dim=", edge_dim,
        "] in the prepared graph's CSR order (nn::prepare_graph(graph, add_self_loops, edge_attr))");
}

}  // namespace edgeattn::nn
