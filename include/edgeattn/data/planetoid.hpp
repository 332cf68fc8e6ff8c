// The Planetoid citation datasets (Cora, CiteSeer, PubMed) from their original `ind.<name>.*` files
// (Yang, Cohen & Salakhutdinov, ICML 2016), as GCN, GAT and PyG use them.
//
// Reads ind.<name>.{x, y, tx, ty, allx, ally, graph, test.index} from `dir` (each also as a `.gz`
// copy) with a strict unpickler that never executes code, and rebuilds exactly the node order,
// features, labels and public split of tkipf/gcn `utils.py::load_data` and PyG
// `read_planetoid_data` (datasets/PROVENANCE.md §3.1):
//   nodes 0..len(allx)-1      features/labels = rows of allx/ally, in order
//   node test.index[i]        features/labels = row i of tx/ty (test.index is in file order)
//   CiteSeer's 15 gap ids     (in the test id range, but not listed in test.index) get an empty
//                             feature row and label -1. PyG's argmax makes them class 0 and gcn
//                             leaves their one-hot rows all zero; -1 says "no label" explicitly, so
//                             they are in no split and never trained on.
//   graph                     the undirected simple graph of the adjacency lists (duplicates
//                             collapse, every edge is stored in both directions); self-loops per
//                             `PlanetoidOptions::self_loops`.
//
//   features  [num_nodes, num_features] sparse float32 (CsrMatrix), values as stored
//   labels    [num_nodes] class id, -1 for CiteSeer's gap nodes
//   splits    "public": train = ids 0..len(y)-1, val = the next 500 ids, test = test.index sorted
//             "full":   PyG's split="full": val/test as public, train = every other labelled node
//
// Statistics (self-loops removed): Cora 2708 nodes, 10556 directed edges, 1433 features, 7
// classes, 140/500/1000; CiteSeer 3327, 9104, 3703, 6, 120/500/1000; PubMed 19717, 88648, 500, 3,
// 60/500/1000. PubMed needs ind.pubmed.allx, which the repository does not ship.
//
// Example:
//   auto ds = edgeattn::data::load_planetoid("datasets/cora/planetoid", "cora");
//   ds.num_nodes();                  // 2708
//   ds.split("public").train.size(); // 140
//   auto gcn = edgeattn::data::load_planetoid(dir, "citeseer", {.self_loops = edgeattn::SelfLoops::keep});
#pragma once

#include <filesystem>
#include <string>

#include "edgeattn/data/dataset.hpp"
#include "edgeattn/graph/build.hpp"

namespace edgeattn::data {

struct PlanetoidOptions {
  /// remove: drop the self-loops the lists contain (PyG; CiteSeer has 124, PubMed 3).
  /// keep:   keep them, as gcn's adjacency does before it adds I.
  /// add:    drop them, then add one self-loop per node.
  SelfLoops self_loops = SelfLoops::remove;
  /// Dataset::default_split: "public" or "full".
  std::string default_split = "public";
};

/// Loads ind.<name>.* from `dir`. Throws IoError naming a missing file (for ind.pubmed.allx also
/// its expected size, sha256 and where it is published); ParseError naming the file for malformed
/// content (bad pickle, one-hot rows without exactly one 1, graph ids out of range, test.index
/// ids out of range, repeated or not starting at len(allx)); InvalidArgument naming the files
/// whose shapes disagree (x vs y rows, tx vs ty rows, feature or class counts).
Dataset load_planetoid(const std::filesystem::path& dir, const std::string& name,
                       const PlanetoidOptions& options = {});

}  // namespace edgeattn::data
