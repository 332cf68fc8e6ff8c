#include "edgeattn/data/dataset.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "edgeattn/core/error.hpp"

namespace edgeattn::data {

Features::Features(Tensor dense) : storage_(std::move(dense)) {
  const Tensor& t = std::get<Tensor>(storage_);
  if (!t.absent() && t.rank() != 2)
    raise<ShapeError>("Features: dense features have shape ", t.shape().str(),
                      ", expected [num_nodes, num_features]");
}

Features::Features(CsrMatrix sparse) : storage_(std::move(sparse)) {}

Features Features::mapped(Tensor dense, std::string source) {
  if (source.empty()) raise<InvalidArgument>("Features::mapped: the source name is empty");
  Features f(std::move(dense));
  f.mapped_from_ = std::move(source);
  return f;
}

Features::Features(const Features& other) : mapped_from_(other.mapped_from_) {
  if (other.is_mapped()) {
    const Tensor& t = std::get<Tensor>(other.storage_);
    storage_ = t.share_reshaped(t.shape());
  } else {
    storage_ = other.storage_;
  }
}

Features& Features::operator=(const Features& other) {
  if (this != &other) *this = Features(other);
  return *this;
}

int64_t Features::rows() const {
  if (is_sparse()) return sparse().rows();
  const Tensor& t = std::get<Tensor>(storage_);
  return t.absent() ? 0 : t.dim(0);
}

int64_t Features::cols() const {
  if (is_sparse()) return sparse().cols();
  const Tensor& t = std::get<Tensor>(storage_);
  return t.absent() ? 0 : t.dim(1);
}

int64_t Features::nnz() const {
  if (is_sparse()) return sparse().nnz();
  const Tensor& t = std::get<Tensor>(storage_);
  return std::count_if(t.span().begin(), t.span().end(), [](float x) { return x != 0.f; });
}

double Features::density() const {
  const double cells = static_cast<double>(rows()) * static_cast<double>(cols());
  return cells > 0 ? static_cast<double>(nnz()) / cells : 0.0;
}

const Tensor& Features::dense() const {
  if (is_sparse())
    raise<InvalidArgument>("Features::dense: the features are sparse (use sparse() or to_dense())");
  return std::get<Tensor>(storage_);
}
Tensor& Features::dense() {
  if (is_sparse())
    raise<InvalidArgument>("Features::dense: the features are sparse (use sparse() or to_dense())");
  return std::get<Tensor>(storage_);
}
const CsrMatrix& Features::sparse() const {
  if (!is_sparse()) raise<InvalidArgument>("Features::sparse: the features are dense (use dense())");
  return std::get<CsrMatrix>(storage_);
}
CsrMatrix& Features::sparse() {
  if (!is_sparse()) raise<InvalidArgument>("Features::sparse: the features are dense (use dense())");
  return std::get<CsrMatrix>(storage_);
}

Tensor Features::to_dense() const {
  if (is_sparse()) return sparse().to_dense();
  const Tensor& t = std::get<Tensor>(storage_);
  return t.absent() ? Tensor({0, 0}) : t;
}

const Split& Dataset::split(const std::string& which) const {
  const std::string& key = which.empty() ? default_split : which;
  const auto it = splits.find(key);
  if (it == splits.end()) {
    if (splits.empty())
      raise<InvalidArgument>(
          "Dataset '", name, "' has no train/validation/test split (its files define none",
          which.empty() ? "" : detail::message(", so none named '", which, "'"),
          "); add one: from the labels with data::random_split (Python: Dataset.add_random_split), or "
          "your own lists (Python: Dataset.add_split)");
    std::ostringstream names;
    for (const auto& [n, s] : splits) names << (names.tellp() > 0 ? ", " : "") << n;
    raise<InvalidArgument>("Dataset '", name, "': no split named '", key,
                           "' (available: ", splits.empty() ? std::string("none") : names.str(), ")");
  }
  return it->second;
}

namespace {

// The first element of x[0, count) that is NaN or infinite, or count: an OR of exponent tests over
// blocks (vectorised), then the block that has one is searched.
int64_t first_non_finite(const float* x, int64_t count) {
  constexpr int64_t kBlock = 4096;
  for (int64_t b = 0; b < count; b += kBlock) {
    const int64_t e = std::min(count, b + kBlock);
    uint32_t any = 0;
    for (int64_t i = b; i < e; ++i) {
      uint32_t bits;
      std::memcpy(&bits, x + i, sizeof bits);
      any |= static_cast<uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
    }
    if (any)
      for (int64_t i = b; i < e; ++i)
        if (!std::isfinite(x[i])) return i;
  }
  return count;
}

// NaN or infinite features poison every node that reads them (an epoch's loss, or only the
// evaluation's, turns NaN): found here, named by node and column. Mapped features are not read
// (they may exceed memory; their file was not checksummed either).
void check_finite_features(const std::string& where, const Features& f,
                           const std::vector<SourceFile>& sources) {
  if (f.is_mapped() || f.cols() == 0 || f.rows() == 0) return;
  const auto from = [&] {
    std::string list;
    for (const SourceFile& s : sources) list += (list.empty() ? "" : ", ") + s.path;
    return list.empty() ? std::string() : " (read from " + list + ")";
  };
  if (f.is_sparse()) {
    const CsrMatrix& m = f.sparse();
    const std::span<const float> v = m.values();
    const int64_t k = first_non_finite(v.data(), static_cast<int64_t>(v.size()));
    if (k == static_cast<int64_t>(v.size())) return;
    const std::span<const int64_t> ptr = m.indptr();
    const int64_t row = std::upper_bound(ptr.begin(), ptr.end(), k) - ptr.begin() - 1;
    raise<InvalidArgument>(where, ": feature [", row, ", ", m.indices()[static_cast<size_t>(k)], "] is ",
                           v[static_cast<size_t>(k)], ", expected a finite value", from());
  }
  const Tensor& d = f.dense();
  const int64_t k = first_non_finite(d.data(), d.numel());
  if (k == d.numel()) return;
  raise<InvalidArgument>(where, ": feature [", k / d.dim(1), ", ", k % d.dim(1), "] is ", d.data()[k],
                         ", expected a finite value", from());
}

}  // namespace

void Dataset::validate() const {
  const int64_t n = num_nodes();
  const std::string where = "Dataset '" + name + "'";
  if (graph.num_src() != n)
    raise<InvalidArgument>(where, ": graph has ", n, " destinations but ", graph.num_src(),
                           " sources, expected a square graph");
  if (features.rows() != n && !(features.rows() == 0 && features.cols() == 0))
    raise<InvalidArgument>(where, ": features have ", features.rows(), " rows, expected num_nodes = ", n);
  if (labels.multi_label()) {
    if (labels.multi_hot.rank() != 2 || labels.multi_hot.dim(0) != n ||
        labels.multi_hot.dim(1) != labels.num_classes)
      raise<InvalidArgument>(where, ": multi-label labels have shape ", labels.multi_hot.shape().str(),
                             ", expected [", n, ", ", labels.num_classes, "]");
  } else if (!labels.classes.empty()) {
    if (static_cast<int64_t>(labels.classes.size()) != n)
      raise<InvalidArgument>(where, ": ", labels.classes.size(), " labels, expected num_nodes = ", n);
    for (size_t i = 0; i < labels.classes.size(); ++i) {
      const int32_t c = labels.classes[i];
      if (c < -1 || c >= labels.num_classes)
        raise<InvalidArgument>(where, ": node ", i, " has label ", c, ", expected -1 or [0, ",
                               labels.num_classes, ")");
    }
  }
  if (!labels.class_names.empty() && static_cast<int64_t>(labels.class_names.size()) != labels.num_classes)
    raise<InvalidArgument>(where, ": ", labels.class_names.size(), " class names for ", labels.num_classes,
                           " classes");
  check_finite_features(where, features, sources);
  if (!edge_weight.empty() && static_cast<int64_t>(edge_weight.size()) != graph.num_edges())
    raise<InvalidArgument>(where, ": ", edge_weight.size(), " edge weights for ", graph.num_edges(),
                           " edges");
  if (const auto e =
          static_cast<size_t>(first_non_finite(edge_weight.data(), static_cast<int64_t>(edge_weight.size())));
      e < edge_weight.size()) {
    const auto ptr = graph.row_ptr();
    const int64_t dst = std::upper_bound(ptr.begin(), ptr.end(), static_cast<int64_t>(e)) - ptr.begin() - 1;
    raise<InvalidArgument>(where, ": the weight of edge ", graph.col_idx()[e], " -> ", dst, " is ",
                           edge_weight[e], ", expected a finite value");
  }
  if (!edge_attr.absent() && (edge_attr.rank() != 2 || edge_attr.dim(0) != graph.num_edges()))
    raise<InvalidArgument>(where, ": edge_attr has shape ", edge_attr.shape().str(), ", expected [",
                           graph.num_edges(), ", edge_dim] (one row per edge)");
  if (!node_names.empty() && static_cast<int64_t>(node_names.size()) != n)
    raise<InvalidArgument>(where, ": ", node_names.size(), " node names for ", n, " nodes");
  if (!graph_ptr.empty()) {
    if (graph_ptr.front() != 0 || graph_ptr.back() != n ||
        !std::is_sorted(graph_ptr.begin(), graph_ptr.end()))
      raise<InvalidArgument>(where, ": graph_ptr must rise from 0 to num_nodes = ", n, "; found ",
                             graph_ptr.front(), " ... ", graph_ptr.back());
    // No edge may join two graphs: each destination's sources lie in its own range.
    for (int64_t g = 0; g + 1 < static_cast<int64_t>(graph_ptr.size()); ++g)
      for (int64_t v = graph_ptr[static_cast<size_t>(g)]; v < graph_ptr[static_cast<size_t>(g) + 1]; ++v)
        for (const int32_t u : graph.row(v))
          if (u < graph_ptr[static_cast<size_t>(g)] || u >= graph_ptr[static_cast<size_t>(g) + 1])
            raise<InvalidArgument>(where, ": edge ", u, " -> ", v, " joins graph ", g, " to another graph");
  }
  if (!graph_labels.classes.empty()) {
    if (static_cast<int64_t>(graph_labels.classes.size()) != num_graphs())
      raise<InvalidArgument>(where, ": ", graph_labels.classes.size(), " graph labels for ", num_graphs(),
                             " graphs");
    for (size_t g = 0; g < graph_labels.classes.size(); ++g)
      if (graph_labels.classes[g] < -1 || graph_labels.classes[g] >= graph_labels.num_classes)
        raise<InvalidArgument>(where, ": graph ", g, " has label ", graph_labels.classes[g],
                               ", expected [0, ", graph_labels.num_classes, ")");
  }
  if (!default_split.empty() && !splits.contains(default_split))
    raise<InvalidArgument>(where, ": default split '", default_split, "' is not among the splits");
  for (const auto& [split_name, s] : splits) validate_split(where, split_name, s, n);
}

void validate_split(const std::string& where, const std::string& split_name, const Split& s, int64_t n) {
  std::vector<uint8_t> seen(static_cast<size_t>(n), 0);
  const std::pair<const char*, const std::vector<int64_t>*> parts[] = {
      {"train", &s.train}, {"val", &s.val}, {"test", &s.test}};
  for (const auto& [part, ids] : parts) {
    for (size_t k = 0; k < ids->size(); ++k) {
      const int64_t v = (*ids)[k];
      if (v < 0 || v >= n)
        raise<InvalidArgument>(where, ": split '", split_name, "' ", part, "[", k, "] is ", v,
                               ", expected [0, ", n, ")");
      if (k > 0 && v <= (*ids)[k - 1])
        raise<InvalidArgument>(where, ": split '", split_name, "' ", part,
                               " is not sorted and unique at position ", k);
      if (seen[static_cast<size_t>(v)])
        raise<InvalidArgument>(where, ": split '", split_name, "' puts node ", v, " in ", part,
                               " and another part");
      seen[static_cast<size_t>(v)] = 1;
    }
  }
}

std::vector<uint8_t> to_mask(const std::vector<int64_t>& ids, int64_t num_nodes) {
  std::vector<uint8_t> mask(static_cast<size_t>(num_nodes), 0);
  for (const int64_t v : ids) {
    if (v < 0 || v >= num_nodes)
      raise<InvalidArgument>("to_mask: node ", v, " is outside [0, ", num_nodes, ")");
    mask[static_cast<size_t>(v)] = 1;
  }
  return mask;
}

}  // namespace edgeattn::data
