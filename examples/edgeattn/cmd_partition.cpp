// edgeattn partition: writes a dataset's partition files once, for distributed training that
// reads on each rank only its own part (dist/dataset_part.hpp):
//
//   edgeattn partition --dataset ogbn-products --parts 8 [--partitioner metis] [--split NAME] --out DIR
//   mpirun -np 8 edgeattn train --distributed --partitions DIR --threads 1 ...
//
// Prints the partition's quality: nodes, in-edges and halo nodes per part, the edge cut, the edge
// imbalance and the halo fraction (halo rows exchanged per layer / nodes).
#include <cstdio>
#include <iostream>

#include "args.hpp"
#include "commands.hpp"
#include "dataset_arg.hpp"
#include "edgeattn/core/error.hpp"
#include "edgeattn/dist/dataset_part.hpp"
#include "edgeattn/graph/partition.hpp"
#include "json.hpp"

namespace edgeattn::cli {

int run_partition(std::span<const std::string> argv) {
  Args args("edgeattn partition",
            "Partition a dataset's nodes into parts and write one file per part (for edgeattn train "
            "--distributed --partitions DIR)");
  args.option("dataset", "NAME|PATH", "cora", "dataset name (" + known_dataset_names() + ") or a path");
  add_dataset_source_options(args);
  args.option("split", "NAME", "", "split to train on (default: the dataset's default split)")
      .option("parts", "P", "", "number of parts: the ranks of the distributed run")
      .option("partitioner", "METHOD", "metis (when built with METIS), else degree_balanced",
              "metis, degree_balanced or contiguous (graph/partition.hpp)")
      .option("seed", "S", "0", "METIS's seed")
      .option("out", "DIR", "", "directory to write partitions.txt and part-<r>-of-<P>.npz into")
      .flag("json", "print one JSON object");
  if (!args.parse(argv)) {
    std::cout << args.help();
    return 0;
  }
  if (!args.given("parts")) throw UsageError("--parts is required");
  if (!args.given("out")) throw UsageError("--out DIR is required");
  const auto parts = static_cast<int>(args.integer("parts", 1, 1 << 20));
  const PartitionMethod method = args.given("partitioner") ? parse_partition_method(args.str("partitioner"))
                                                           : default_partition_method();
  data::Dataset ds = load_dataset_arg(args.str("dataset"), args, true);
  ds.graph = ds.graph.with_input_maps({}, {});
  add_split_spec(ds, args.str("split"));
  const auto owner = partition_nodes(
      ds.graph, {.parts = parts, .method = method, .seed = static_cast<uint64_t>(args.integer("seed", 0))});
  const PartitionQuality q =
      dist::write_partitions(args.str("out"), ds, args.str("split"), owner, parts, method);
  if (args.flag_set("json")) {
    JsonObject j;
    j.field("dataset", ds.name)
        .field("parts", static_cast<int64_t>(parts))
        .field("partitioner", to_string(method));
    j.field("edge_cut", q.edge_cut)
        .field("edge_imbalance", q.edge_imbalance)
        .field("node_imbalance", q.node_imbalance)
        .field("halo_fraction", q.halo_fraction);
    j.field("out", args.str("out"));
    std::cout << j.str() << "\n";
    return 0;
  }
  std::printf("%s: %d %s parts written to %s\n  part      nodes      edges       halo\n", ds.name.c_str(),
              parts, to_string(method), args.str("out").c_str());
  for (int p = 0; p < parts; ++p)
    std::printf("  %4d %10lld %10lld %10lld\n", p, static_cast<long long>(q.nodes[static_cast<size_t>(p)]),
                static_cast<long long>(q.edges[static_cast<size_t>(p)]),
                static_cast<long long>(q.halo_nodes[static_cast<size_t>(p)]));
  std::printf(
      "edge cut %lld of %lld edges, edge imbalance %.3f, node imbalance %.3f, halo %.3f of the nodes\n",
      static_cast<long long>(q.edge_cut), static_cast<long long>(ds.graph.num_edges()), q.edge_imbalance,
      q.node_imbalance, q.halo_fraction);
  return 0;
}

}  // namespace edgeattn::cli
