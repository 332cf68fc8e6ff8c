// edgeattn dataset info NAME|PATH [--format F] [--root DIR] [--json] [--no-verify]
//
// Loads a named dataset (verifying its files against the manifest) or any supported file or
// directory, and prints its statistics: nodes, edges as stored, undirected pairs, self-loops,
// isolated nodes, features and their density, classes and their sizes, the default split's sizes
// and the in-degree distribution. `--json` prints one object whose keys include num_nodes,
// num_edges, num_features, num_classes, train, val and test.
#include <cstdio>
#include <iostream>

#include "args.hpp"
#include "commands.hpp"
#include "dataset_arg.hpp"
#include "edgeattn/data/statistics.hpp"
#include "json.hpp"

namespace edgeattn::cli {
namespace {

std::string percent(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100.0 * x);
  return buf;
}

void print_human(const data::Dataset& ds, const data::DatasetStats& s) {
  std::printf("%s (%s)\n", s.name.c_str(), s.format.c_str());
  std::printf("  nodes           %lld\n", static_cast<long long>(s.num_nodes));
  std::printf("  edges           %lld directed as stored (%lld undirected pairs; %s)%s\n",
              static_cast<long long>(s.num_edges), static_cast<long long>(s.undirected_pairs),
              s.symmetric ? "symmetric" : "not symmetric", s.weighted ? ", weighted" : "");
  std::printf("  self-loops      %lld\n", static_cast<long long>(s.self_loops));
  std::printf("  isolated nodes  %lld\n", static_cast<long long>(s.isolated_nodes));
  if (s.num_features > 0)
    std::printf("  features        %lld, %s, density %s\n", static_cast<long long>(s.num_features),
                s.sparse_features ? "sparse" : "dense", percent(s.feature_density).c_str());
  else
    std::printf("  features        none\n");
  if (s.num_classes > 0) {
    std::printf("  classes         %lld%s", static_cast<long long>(s.num_classes),
                s.multi_label ? " (multi-label)" : "");
    if (!s.class_counts.empty()) {
      std::printf(":");
      for (size_t c = 0; c < s.class_counts.size(); ++c) {
        const std::string label =
            c < ds.labels.class_names.size() ? ds.labels.class_names[c] : std::to_string(c);
        std::printf(" %s=%lld", label.c_str(), static_cast<long long>(s.class_counts[c]));
      }
    }
    if (s.unlabelled > 0) std::printf("; %lld nodes unlabelled", static_cast<long long>(s.unlabelled));
    std::printf("\n");
  }
  if (!s.split.empty())
    std::printf("  split           '%s': train %lld / val %lld / test %lld%s\n", s.split.c_str(),
                static_cast<long long>(s.train), static_cast<long long>(s.val),
                static_cast<long long>(s.test), ds.splits.size() > 1 ? " (more splits available)" : "");
  std::printf("  in-degree       min %lld, median %lld, mean %.2f, p90 %lld, p99 %lld, max %lld\n",
              static_cast<long long>(s.in_degree.min), static_cast<long long>(s.in_degree.median),
              s.in_degree.mean, static_cast<long long>(s.in_degree.p90),
              static_cast<long long>(s.in_degree.p99), static_cast<long long>(s.in_degree.max));
  for (const auto& src : ds.sources)
    std::printf("  file            %s%s\n", src.path.c_str(),
                src.sha256.empty() ? "" : "  (sha256 verified)");
  for (const auto& note : ds.notes) std::printf("  note            %s\n", note.c_str());
}

std::string json_of(const data::Dataset& ds, const data::DatasetStats& s) {
  JsonObject j;
  j.field("name", s.name).field("format", s.format);
  j.field("num_nodes", s.num_nodes)
      .field("num_edges", s.num_edges)
      .field("undirected_pairs", s.undirected_pairs);
  j.field("symmetric", s.symmetric)
      .field("self_loops", s.self_loops)
      .field("isolated_nodes", s.isolated_nodes);
  j.field("weighted", s.weighted);
  j.field("num_features", s.num_features).field("sparse_features", s.sparse_features);
  j.field("feature_density", s.feature_density);
  j.field("num_classes", s.num_classes).field("multi_label", s.multi_label);
  j.raw_field("class_counts", json_int_array(s.class_counts));
  j.field("unlabelled", s.unlabelled);
  j.field("split", s.split).field("train", s.train).field("val", s.val).field("test", s.test);
  std::vector<std::string> split_names;
  for (const auto& [name, split] : ds.splits) split_names.push_back(name);
  j.raw_field("splits", json_string_array(split_names));
  JsonObject deg;
  deg.field("min", s.in_degree.min).field("median", s.in_degree.median).field("mean", s.in_degree.mean);
  deg.field("p90", s.in_degree.p90).field("p99", s.in_degree.p99).field("max", s.in_degree.max);
  j.raw_field("in_degree", deg.str());
  std::vector<std::string> files;
  for (const auto& src : ds.sources) files.push_back(src.path);
  j.raw_field("files", json_string_array(files));
  j.raw_field("notes", json_string_array(ds.notes));
  return j.str();
}

}  // namespace

int run_dataset_info(std::span<const std::string> argv) {
  Args args("edgeattn dataset info",
            "Print a dataset's statistics. NAME is one of the registry's datasets (cora, citeseer, pubmed, "
            "karate), checked against the manifest; PATH is a file or directory in any supported format.");
  args.option("format", "F", "", "format of a named dataset (default: its first; e.g. planetoid, linqs, npz)")
      .option("root", "DIR", "",
              "data root for named datasets (default: $EDGEATTN_DATA, else the repository's datasets/)")
      .flag("no-verify", "skip the sha256 check of a named dataset's files")
      .flag("json", "print one JSON object instead of text")
      .positional("NAME|PATH", "dataset name or path");
  if (!args.parse(argv)) {
    std::cout << args.help();
    return 0;
  }
  const data::Dataset ds = load_dataset_arg(args.positional_value(), args.str("format"), args.str("root"),
                                            !args.flag_set("no-verify"));
  const data::DatasetStats stats = data::describe(ds);
  if (args.flag_set("json"))
    std::cout << json_of(ds, stats) << "\n";
  else
    print_human(ds, stats);
  return 0;
}

}  // namespace edgeattn::cli
