#include "data/format_dispatch.hpp"

#include <algorithm>
#include <fstream>
#include <string_view>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/file_io.hpp"
#include "edgeattn/data/edge_list.hpp"
#include "edgeattn/data/graphsage.hpp"
#include "edgeattn/data/linqs.hpp"
#include "edgeattn/data/matrix_market.hpp"
#include "edgeattn/data/npz.hpp"
#include "edgeattn/data/ogb.hpp"
#include "edgeattn/data/planetoid.hpp"
#include "edgeattn/data/registry.hpp"
#include "edgeattn/data/splits.hpp"
#include "edgeattn/data/tu_dataset.hpp"
#include "edgeattn/graph/transforms.hpp"

namespace edgeattn::data {
namespace fs = std::filesystem;

namespace {

// Formats without a published split get the usual semi-supervised one (20 labelled nodes per
// class, 500 validation, 1000 test), seeded so every run and every user sees the same nodes.
// A dataset too small for it (a class with fewer than 20 nodes, fewer than 1500 nodes left) loads
// without a split, and its notes say why: the data is valid, only this default does not fit it.
void add_default_random_split(Dataset& ds) {
  if (!ds.splits.empty() || ds.labels.classes.empty()) return;
  try {
    ds.splits["random"] = random_split(ds.labels, 20, 500, 1000, /*seed=*/0);
  } catch (const InvalidArgument& e) {
    ds.notes.push_back(
        std::string("no split: the files carry none, and the default one (20 per class / 500 / "
                    "1000) does not fit: ") +
        e.what() + "; make one with data::random_split (edgeattn train --split random:P,V,T)");
    return;
  }
  ds.default_split = "random";
  ds.notes.push_back("split 'random': 20 per class / 500 / 1000, seed 0 (the files carry no split)");
}

// A ZIP's local file header signature: what an .npz starts with (numpy.savez, write_npz).
bool starts_like_a_zip(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::string_view(magic, 4) == std::string_view("PK\x03\x04", 4);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "cora.content.gz" -> "cora.content"
std::string strip_gz(std::string name) {
  return ends_with(name, ".gz") ? name.substr(0, name.size() - 3) : name;
}

}  // namespace

Dataset load_named_format(const fs::path& root, const std::string& name, const std::string& format) {
  const fs::path dir = root / name / format;
  Dataset ds;
  if (format == "planetoid") {
    ds = load_planetoid(dir, name);
  } else if (format == "linqs") {
    ds = load_linqs(dir, name);
    add_default_random_split(ds);
  } else if (format == "npz") {
    // The gnn-benchmark files (cora, citeseer, amazon-*, coauthor-*, cora-full) store some edges
    // once; their own loader (gnnbench's standardize), PyG's read_npz (CitationFull, Amazon,
    // Coauthor) and DGL's GNNBenchmarkDataset all make them undirected without self-loops. A file
    // loaded by path (load_dataset_path) keeps its edges as stored.
    NpzOptions options;
    options.undirected = true;
    options.self_loops = SelfLoops::remove;
    ds = load_npz(dir / (name + ".npz"), options);
    add_default_random_split(ds);
  } else if (format == "ogb") {
    // OGB's own loaders add the reverse edges of the undirected graphs (master.csv's
    // add_inverse_edge: products and proteins) and keep the citations of arxiv and papers100M
    // directed. papers100M (binary layout) loads only where memory allows; ogb_binary.hpp streams it.
    OgbOptions options;
    const bool citations = name == "ogbn-arxiv" || name == "ogbn-papers100M";
    options.undirected = !citations;
    options.name = name;
    options.node_features_from_edges = name == "ogbn-proteins";
    ds = load_ogb_node_dataset(dir, options);
    if (name == "ogbn-proteins") ds.labels.eval_metric = "rocauc";  // OGB's Evaluator for it
    if (citations) ds.notes.push_back("edges are citations, directed as OGB stores them");
  } else if (format == "tu") {
    ds = load_tu_dataset(dir, TuOptions{"", name});
  } else if (format == "graphsage") {
    ds = load_graphsage(dir, GraphSageOptions{name, name});
  } else if (format == "adjlist" && name == "karate") {
    ds = load_karate(dir / "karate.adjlist");
  } else {
    raise<InvalidArgument>("dataset '", name, "' has no loader for format '", format, "'");
  }
  ds.name = name;
  ds.validate();
  return ds;
}

Dataset load_dataset_path(const fs::path& path, bool map_features) {
  if (path.empty())
    raise<InvalidArgument>("load_dataset_path: the path is empty, expected a file or directory");
  if (!fs::exists(path)) raise<IoError>(path.string(), ": no such file or directory");
  if (!fs::is_directory(path) && !fs::is_regular_file(path))  // a FIFO would block, /dev/zero never end
    raise<IoError>(path.string(),
                   ": is not a regular file or a directory (a FIFO, a device or a socket), "
                   "expected a dataset file or directory");
  if (map_features && (fs::is_directory(path) || !ends_with(path.filename().string(), ".npz")))
    raise<InvalidArgument>(
        path.string(),
        ": only .npz datasets can have their features mapped in place (a stored float32 "
        "attr_matrix); for other formats save the features as a float32 .npy file and map that "
        "(map_features)");
  Dataset ds;
  if (fs::is_directory(path)) {
    // Planetoid: ind.<name>.x (or .gz) inside; OGB: raw/edge.csv(.gz) or raw/data.npz (binary);
    // LINQS: <name>.content.
    for (const auto& entry : fs::directory_iterator(path)) {
      const std::string file = strip_gz(entry.path().filename().string());
      if (file.rfind("ind.", 0) == 0 && ends_with(file, ".x")) {
        return load_planetoid(path, file.substr(4, file.size() - 6));
      }
    }
    if (fs::exists(path / "raw" / "edge.csv.gz") || fs::exists(path / "raw" / "edge.csv") ||
        fs::exists(path / "raw" / "data.npz")) {
      ds = load_ogb_node_dataset(path);
      ds.validate();
      return ds;
    }
    for (const auto& entry : fs::directory_iterator(path)) {
      const std::string file = strip_gz(entry.path().filename().string());
      if (ends_with(file, ".content")) {
        ds = load_linqs(path, file.substr(0, file.size() - 8));
        add_default_random_split(ds);
        return ds;
      }
      if (file == "Pubmed-Diabetes.NODE.paper.tab") {
        ds = load_linqs(path, "pubmed");
        add_default_random_split(ds);
        return ds;
      }
      if (ends_with(file, "-G.json"))
        return load_graphsage(path, GraphSageOptions{file.substr(0, file.size() - 7), ""});
      if (ends_with(file, "_graph_indicator.txt"))
        return load_tu_dataset(path, TuOptions{file.substr(0, file.size() - 20), ""});
    }
    raise<ParseError>(
        path.string(),
        ": a directory, but not a Planetoid (ind.<name>.x), OGB (raw/edge.csv.gz or raw/data.npz), "
        "LINQS (<name>.content), GraphSAGE (<prefix>-G.json) or TUDataset (<DS>_A.txt) dataset");
  }
  const std::string file = strip_gz(path.filename().string());
  if (ends_with(file, ".npz") || starts_like_a_zip(path)) {  // an .npz saved without its extension too
    NpzOptions options;
    options.map_features = map_features;
    ds = load_npz(path, options);
    add_default_random_split(ds);
  } else if (ends_with(file, ".mtx")) {
    ds = load_matrix_market_graph(path);
  } else if (file == "karate.adjlist") {
    ds = load_karate(path);  // 1-based, with Zachary's two factions as labels
  } else if (ends_with(file, ".adjlist")) {
    ds = load_adjacency_list(path);
    // networkx's write_adjlist lists an undirected graph's edges once (DeepWalk's files list both
    // directions); the file cannot say which it is, so it loads as stored and says so.
    if (!is_symmetric(ds.graph))
      ds.notes.push_back(path.string() +
                         ": not symmetric, loaded as stored (line 'v n1 n2' = edges v -> n_i); if the "
                         "file lists each undirected edge once (networkx's write_adjlist), symmetrise "
                         "it: data::to_undirected, Python Dataset.to_undirected()");
  } else if (ends_with(file, ".content")) {
    ds = load_linqs(path.parent_path(), file.substr(0, file.size() - 8));
    add_default_random_split(ds);
  } else {
    ds = load_edge_list(path);
  }
  ds.validate();
  return ds;
}

}  // namespace edgeattn::data
