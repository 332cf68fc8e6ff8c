// Edge lists (SNAP style) and adjacency lists, and Zachary's karate club.
//
// Edge list: one edge per line, `source target` or `source target weight`, separated by any
// spaces/tabs; LF or CRLF line ends; blank lines and lines starting with `#` or `%` are comments
// (a `#`/`%` after the fields also starts a comment). No header line. Every edge line must have
// the column count of the first one (2, or 3 with a weight); a line with other columns is a
// ParseError naming "<file>:<line>". Edge `u v` is the edge u -> v (source u, destination v;
// Graph row v lists u), the PyG edge_index convention.
//
// Adjacency list (networkx/DeepWalk `.adjlist`): `v n1 n2 ...` per line gives the edges v -> n_i;
// a line with only `v` declares an isolated node.
//
// Node ids, per EdgeListOptions:
//   relabel = false  ids are integers used as given (minus 1 when one_based); num_nodes is the
//                    largest id + 1 unless set. Negative ids (or 0 when one_based), and ids at or
//                    above num_nodes / max_nodes, are ParseErrors naming the line.
//   relabel = true   ids are any tokens, compared as text ("7" and "07" differ), numbered
//                    0..n-1 in order of first appearance; Dataset::node_names keeps them.
// Weights (3-column edge lists) go to Dataset::edge_weight in CSR order; a reverse edge added by
// `undirected` carries the weight of the edge it mirrors; with Duplicates::merge the first copy's
// weight wins.
//
// Example:
//   auto ds = edgeattn::data::load_edge_list("web-Google.txt.gz",
//       {.undirected = true, .self_loops = edgeattn::SelfLoops::remove, .relabel = true});
//   ds.node_names[0];   // the original id of node 0
//   auto karate = edgeattn::data::load_karate("datasets/karate/adjlist/karate.adjlist");
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <string_view>

#include "edgeattn/data/dataset.hpp"
#include "edgeattn/graph/build.hpp"

namespace edgeattn::data {

struct EdgeListOptions {
  /// Add the reverse of every edge (BuildOptions::symmetrize).
  bool undirected = false;
  SelfLoops self_loops = SelfLoops::keep;
  Duplicates duplicates = Duplicates::merge;
  /// Map arbitrary id tokens to 0..n-1 in order of first appearance (see the header comment).
  bool relabel = false;
  /// Ids as given start at 1 (ignored when relabelling).
  bool one_based = false;
  /// Ids as given: the node count; -1 means the largest id + 1 (ignored when relabelling).
  int64_t num_nodes = -1;
  /// Refuse more nodes than this (ParseError naming the line of the id that exceeds it): guards
  /// against a stray huge id making every per-node array huge.
  int64_t max_nodes = std::numeric_limits<int32_t>::max();
};

/// Edge list from text in memory; `name` names the source in errors and is the Dataset's name.
/// Dataset: format "edge-list", no features (0 x 0), no labels.
Dataset parse_edge_list(std::string_view text, const std::string& name, const EdgeListOptions& options = {});
/// Reads `path` via read_file (so `.gz` works); name = file name without extension/`.gz`.
Dataset load_edge_list(const std::filesystem::path& path, const EdgeListOptions& options = {});

/// Adjacency list from text in memory; format "adjlist" (as the registry and --format name it), otherwise as
/// parse_edge_list.
Dataset parse_adjacency_list(std::string_view text, const std::string& name,
                             const EdgeListOptions& options = {});
Dataset load_adjacency_list(const std::filesystem::path& path, const EdgeListOptions& options = {});

/// Zachary's karate club from DeepWalk's `karate.adjlist` (1-based, symmetric): 34 nodes, 78
/// undirected edges stored as 156 directed ones, no self-loops. Labels are networkx's `club`
/// attribute: class 0 "Mr. Hi" = nodes {1-9, 11, 12, 13, 14, 17, 18, 20, 22} (1-based), class 1
/// "Officer" = the other 17. Features are empty (0 x 0): the file has none, and an identity
/// matrix is a modelling choice left to the caller. node_names are "1".."34". No splits.
Dataset load_karate(const std::filesystem::path& adjlist_path);

}  // namespace edgeattn::data
