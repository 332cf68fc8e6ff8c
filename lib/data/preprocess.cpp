// Dataset preprocessing: graph transforms (graph/transforms.hpp) plus the bookkeeping that keeps
// per-node and per-edge data aligned. Per-edge data follows TransformedGraph::old_edge; per-node
// data follows an old_of_new list (new node k was old node old_of_new[k]).
#include "edgeattn/data/preprocess.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/parallel.hpp"
#include "edgeattn/graph/components.hpp"
#include "edgeattn/graph/transforms.hpp"

namespace edgeattn::data {
namespace {

constexpr int64_t kRowGrain = 1024;

// Per-edge weights of the new graph: old_edge >= 0 takes that weight; otherwise `fallback(e)`.
template <class Fallback>
std::vector<float> follow_weights(const std::vector<float>& old_weight, const std::vector<int64_t>& old_edge,
                                  Fallback&& fallback) {
  if (old_weight.empty()) return {};
  std::vector<float> w(old_edge.size());
  for (size_t e = 0; e < old_edge.size(); ++e)
    w[e] = old_edge[e] >= 0 ? old_weight[static_cast<size_t>(old_edge[e])] : fallback(e);
  return w;
}

// Per-edge attribute rows of the new graph: old_edge >= 0 takes that row; otherwise the row of
// `fallback(e)` (an old edge), or zeros when it is negative (an added self-loop).
template <class Fallback>
Tensor follow_rows(const Tensor& old_attr, const std::vector<int64_t>& old_edge, Fallback&& fallback) {
  if (old_attr.absent()) return {};
  const int64_t d = old_attr.dim(1);
  Tensor out({static_cast<int64_t>(old_edge.size()), d}, 0.f);
  parallel_for(0, static_cast<int64_t>(old_edge.size()), kRowGrain, [&](int64_t b, int64_t end) {
    for (int64_t e = b; e < end; ++e) {
      const int64_t from = old_edge[static_cast<size_t>(e)] >= 0 ? old_edge[static_cast<size_t>(e)]
                                                                 : fallback(static_cast<size_t>(e));
      if (from >= 0) std::copy_n(old_attr.data() + from * d, d, out.data() + e * d);
    }
  });
  return out;
}

constexpr auto kNoRow = [](size_t) { return int64_t{-1}; };

Features select_feature_rows(const Features& f, std::span<const int64_t> old_of_new) {
  if (f.rows() == 0 && f.cols() == 0) return f;  // a dataset without features
  if (f.is_sparse()) return Features(f.sparse().select_rows(old_of_new));
  return Features(gather_rows(f.dense().view(), old_of_new));
}

std::vector<int64_t> remap_ids(const std::vector<int64_t>& ids, const std::vector<int64_t>& new_of_old) {
  std::vector<int64_t> out;
  out.reserve(ids.size());
  for (int64_t v : ids)
    if (const int64_t w = new_of_old[static_cast<size_t>(v)]; w >= 0) out.push_back(w);
  std::sort(out.begin(), out.end());
  return out;
}

// The dataset on the nodes old_of_new (new node k = old node old_of_new[k]) with graph `t`.
Dataset select_nodes(const Dataset& ds, TransformedGraph t, std::span<const int64_t> old_of_new) {
  Dataset out;
  out.name = ds.name;
  out.format = ds.format;
  out.sources = ds.sources;
  out.notes = ds.notes;
  out.default_split = ds.default_split;
  out.edge_weight = follow_weights(ds.edge_weight, t.old_edge, [](size_t) { return 1.f; });
  out.edge_attr = follow_rows(ds.edge_attr, t.old_edge, kNoRow);
  out.graph = std::move(t.graph);
  out.features = select_feature_rows(ds.features, old_of_new);

  out.labels.num_classes = ds.labels.num_classes;
  out.labels.class_names = ds.labels.class_names;
  if (!ds.labels.classes.empty()) {
    out.labels.classes.resize(old_of_new.size());
    for (size_t k = 0; k < old_of_new.size(); ++k)
      out.labels.classes[k] = ds.labels.classes[static_cast<size_t>(old_of_new[k])];
  }
  if (ds.labels.multi_label()) {
    const int64_t c = ds.labels.multi_hot.dim(1);
    out.labels.multi_hot = Tensor({static_cast<int64_t>(old_of_new.size()), c});
    for (size_t k = 0; k < old_of_new.size(); ++k)
      std::copy_n(ds.labels.multi_hot.data() + old_of_new[k] * c, c,
                  out.labels.multi_hot.data() + static_cast<int64_t>(k) * c);
  }
  if (!ds.node_names.empty()) {
    out.node_names.resize(old_of_new.size());
    for (size_t k = 0; k < old_of_new.size(); ++k)
      out.node_names[k] = ds.node_names[static_cast<size_t>(old_of_new[k])];
  }
  std::vector<int64_t> new_of_old(static_cast<size_t>(ds.num_nodes()), -1);
  for (size_t k = 0; k < old_of_new.size(); ++k)
    new_of_old[static_cast<size_t>(old_of_new[k])] = static_cast<int64_t>(k);
  for (const auto& [name, s] : ds.splits)
    out.splits[name] =
        Split{remap_ids(s.train, new_of_old), remap_ids(s.val, new_of_old), remap_ids(s.test, new_of_old)};
  return out;
}

// A copy of the dataset with a new edge set on the same nodes.
Dataset with_graph(const Dataset& ds, Graph graph, std::vector<float> edge_weight, Tensor edge_attr) {
  Dataset out = ds;
  out.graph = std::move(graph);
  out.edge_weight = std::move(edge_weight);
  out.edge_attr = std::move(edge_attr);
  return out;
}

}  // namespace

void normalize_features(Features& features) {
  if (features.is_mapped())
    raise<InvalidArgument>("normalize_features: the features are read in place from ", features.mapped_from(),
                           "; row-normalising them would copy every row into memory. Use them as stored, or "
                           "normalise the file beforehand");
  auto normalize = [](std::span<float> row) {
    double sum = 0.0;
    for (float v : row) sum += std::abs(static_cast<double>(v));
    if (sum == 0.0) return;
    const double inv = 1.0 / sum;
    for (float& v : row) v = static_cast<float>(v * inv);
  };
  if (features.rows() == 0) return;
  if (features.is_sparse()) {
    CsrMatrix& m = features.sparse();
    const auto indptr = m.indptr();
    const auto values = m.values();
    parallel_for(0, m.rows(), kRowGrain, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const auto lo = static_cast<size_t>(indptr[static_cast<size_t>(r)]);
        normalize(values.subspan(lo, static_cast<size_t>(indptr[static_cast<size_t>(r) + 1]) - lo));
      }
    });
  } else {
    Tensor& x = features.dense();
    const int64_t cols = x.dim(1);
    parallel_for(0, x.dim(0), kRowGrain, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r)
        normalize(x.span().subspan(static_cast<size_t>(r * cols), static_cast<size_t>(cols)));
    });
  }
}

Features sparsify_features(const Features& features, double max_density) {
  // Mapped features stay as they are: counting their zeros alone would read the whole file.
  if (features.is_sparse() || features.is_mapped() || features.rows() == 0 || features.cols() == 0)
    return features;
  if (features.density() > max_density)
    return Features(features.dense().share_reshaped(features.dense().shape()));
  const Tensor& x = features.dense();
  const int64_t rows = x.dim(0), cols = x.dim(1);
  std::vector<int64_t> indptr(static_cast<size_t>(rows) + 1, 0);
  std::vector<int32_t> indices;
  std::vector<float> values;
  indices.reserve(static_cast<size_t>(features.nnz()));
  values.reserve(static_cast<size_t>(features.nnz()));
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x.data() + r * cols;
    for (int64_t c = 0; c < cols; ++c)
      if (row[c] != 0.f) {
        indices.push_back(static_cast<int32_t>(c));
        values.push_back(row[c]);
      }
    indptr[static_cast<size_t>(r) + 1] = static_cast<int64_t>(indices.size());
  }
  return Features(CsrMatrix(rows, cols, std::move(indptr), std::move(indices), std::move(values)));
}

Dataset with_self_loops(const Dataset& ds) {
  ds.validate();
  TransformedGraph t = add_self_loops(ds.graph);
  const int64_t added = t.graph.num_edges() - ds.num_edges();
  Dataset out = with_graph(ds, std::move(t.graph),
                           follow_weights(ds.edge_weight, t.old_edge, [](size_t) { return 1.f; }),
                           follow_rows(ds.edge_attr, t.old_edge, kNoRow));
  out.notes.push_back("preprocess: added " + std::to_string(added) + " self-loops (one per node" +
                      std::string(ds.edge_weight.empty() ? "" : ", weight 1") +
                      std::string(ds.edge_attr.absent() ? "" : ", edge attributes 0") + ")");
  return out;
}

Dataset without_self_loops(const Dataset& ds) {
  ds.validate();
  TransformedGraph t = remove_self_loops(ds.graph);
  const int64_t removed = ds.num_edges() - t.graph.num_edges();
  Dataset out = with_graph(ds, std::move(t.graph),
                           follow_weights(ds.edge_weight, t.old_edge, [](size_t) { return 1.f; }),
                           follow_rows(ds.edge_attr, t.old_edge, kNoRow));
  out.notes.push_back("preprocess: removed " + std::to_string(removed) + " self-loops");
  return out;
}

Dataset to_undirected(const Dataset& ds) {
  ds.validate();
  UndirectedGraph u = to_undirected(ds.graph);
  std::vector<float> w = follow_weights(ds.edge_weight, u.old_edge, [&](size_t e) {
    return ds.edge_weight[static_cast<size_t>(u.old_reverse_edge[e])];
  });
  Tensor attr = follow_rows(ds.edge_attr, u.old_edge, [&](size_t e) { return u.old_reverse_edge[e]; });
  const int64_t before = ds.num_edges(), after = u.graph.num_edges();
  Dataset out = with_graph(ds, std::move(u.graph), std::move(w), std::move(attr));
  out.notes.push_back("preprocess: made undirected: " + std::to_string(before) + " -> " +
                      std::to_string(after) + " edges (reverse edges added, duplicates merged)");
  return out;
}

Dataset largest_component(const Dataset& ds) {
  ds.validate();
  const std::vector<int64_t> nodes = largest_connected_component(ds.graph);
  Dataset out = select_nodes(ds, induced_subgraph(ds.graph, nodes), nodes);
  out.notes.push_back("preprocess: kept the largest connected component: " + std::to_string(nodes.size()) +
                      " of " + std::to_string(ds.num_nodes()) + " nodes, " + std::to_string(out.num_edges()) +
                      " of " + std::to_string(ds.num_edges()) + " edges");
  return out;
}

Dataset reorder(const Dataset& ds, std::span<const int64_t> new_of_old) {
  ds.validate();
  TransformedGraph t = permute(ds.graph, new_of_old);
  const std::vector<int64_t> old_of_new = invert_permutation(new_of_old);
  Dataset out = select_nodes(ds, std::move(t), old_of_new);
  out.notes.push_back("preprocess: reordered " + std::to_string(ds.num_nodes()) + " nodes by a permutation");
  return out;
}

}  // namespace edgeattn::data
