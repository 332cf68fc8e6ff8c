#include "edgeattn/nn/prepare_graph.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <string>
#include <vector>

#include "edgeattn/core/error.hpp"
#include "edgeattn/graph/build.hpp"

namespace edgeattn::nn {

namespace {

// The prepared graph, and for each of its CSR edges the CSR edge of `graph` it came from (-1 for
// an added self-loop; empty without add_self_loops).
struct Rebuilt {
  Graph graph;
  std::vector<int64_t> origin;
};

Rebuilt rebuild(const Graph& graph, bool add_self_loops) {
  Rebuilt r{graph, {}};
  if (add_self_loops) {
    const auto row_ptr = graph.row_ptr();
    const auto col = graph.col_idx();
    std::vector<int32_t> src(col.begin(), col.end()), dst(col.size());
    for (int64_t i = 0; i < graph.num_dst(); ++i)
      for (int64_t e = row_ptr[static_cast<size_t>(i)]; e < row_ptr[static_cast<size_t>(i) + 1]; ++e)
        dst[static_cast<size_t>(e)] = static_cast<int32_t>(i);
    std::vector<int64_t> input_origin;  // per edge of the list given to build_graph
    if (graph.num_dst() == graph.num_src()) {
      r.graph = build_graph(graph.num_dst(), graph.num_src(), std::span<const int32_t>(src),
                            std::span<const int32_t>(dst),
                            {.self_loops = SelfLoops::add, .duplicates = Duplicates::keep});
      input_origin.resize(col.size());
      for (size_t e = 0; e < col.size(); ++e) input_origin[e] = static_cast<int64_t>(e);
    } else {
      // Bipartite (PyG): node i of the destinations is node i of the sources for i < min(N_dst, N_src),
      // as in a sampled block whose destinations come first among its sources.
      for (int32_t i = 0; i < static_cast<int32_t>(std::min(graph.num_dst(), graph.num_src())); ++i) {
        src.push_back(i);
        dst.push_back(i);
      }
      std::vector<int32_t> keep_src, keep_dst;
      const size_t given = col.size();
      for (size_t e = 0; e < src.size(); ++e)
        if (e >= given || src[e] != dst[e]) {
          keep_src.push_back(src[e]);
          keep_dst.push_back(dst[e]);
          input_origin.push_back(e < given ? static_cast<int64_t>(e) : -1);
        }
      r.graph = build_graph(graph.num_dst(), graph.num_src(), std::span<const int32_t>(keep_src),
                            std::span<const int32_t>(keep_dst),
                            {.self_loops = SelfLoops::keep, .duplicates = Duplicates::keep});
    }
    const auto input_of_csr = r.graph.input_edge_of_csr();
    r.origin.resize(input_of_csr.size());
    for (size_t e = 0; e < input_of_csr.size(); ++e) {
      const int64_t k = input_of_csr[e];
      r.origin[e] = k < 0 ? -1 : input_origin[static_cast<size_t>(k)];
    }
  }
  (void)r.graph.transpose();
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

Graph prepare_graph(const Graph& graph, bool add_self_loops) { return rebuild(graph, add_self_loops).graph; }

PreparedGraph prepare_graph(const Graph& graph, bool add_self_loops, ConstView edge_attr,
                            const FillValue& fill) {
  if (edge_attr.rank() != 2 || edge_attr.dim(0) != graph.num_edges())
    raise<ShapeError>("prepare_graph: edge_attr has shape ", edge_attr.shape().str(),
                      ", expected [num_edges=", graph.num_edges(), ", edge_dim] in the graph's CSR order");
  const int64_t f = edge_attr.dim(1);
  if (fill.kind == FillValue::Kind::constant && fill.value.size() != 1 &&
      static_cast<int64_t>(fill.value.size()) != f)
    raise<InvalidArgument>("prepare_graph: fill_value has ", fill.value.size(),
                           " values, expected 1 or edge_dim=", f);
  Rebuilt r = rebuild(graph, add_self_loops);
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
