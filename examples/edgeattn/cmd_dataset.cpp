// edgeattn dataset info NAME|PATH [--format F] [--root DIR] [--offline] [--json] [--no-verify]
// edgeattn dataset download NAME [--format F | --all-formats] [--root DIR]
// edgeattn dataset list [--root DIR] [--json]
//
// Loads a named dataset (verifying its files against the manifest) or any supported file or
// directory, and prints its statistics: nodes, edges as stored, undirected pairs, self-loops,
// isolated nodes, features and their density, classes and their sizes, the default split's sizes
// and the in-degree distribution. `download` fetches a named dataset's missing files into the
// cache (or --root) and verifies them; `list` shows every named dataset, its formats, where each
// is on disk (or that it would be downloaded) and its source. `--json` prints one object whose keys include
// num_nodes, num_edges, num_features, num_classes, train, val and test.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include "args.hpp"
#include "commands.hpp"
#include "dataset_arg.hpp"
#include "edgeattn/core/file_io.hpp"
#include "edgeattn/data/ogb_binary.hpp"
#include "edgeattn/data/registry.hpp"
#include "edgeattn/data/statistics.hpp"
#include "json.hpp"

namespace edgeattn::cli {
namespace fs = std::filesystem;
namespace {

std::string percent(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100.0 * x);
  return buf;
}

void print_human(const data::Dataset& ds, const data::DatasetStats& s) {
  std::printf("%s (%s)\n", s.name.c_str(), s.format.c_str());
  std::printf("  nodes           %lld\n", static_cast<long long>(s.num_nodes));
  if (!ds.graph_ptr.empty()) {
    std::printf("  graphs          %lld", static_cast<long long>(ds.num_graphs()));
    if (ds.graph_labels.num_classes > 0) {
      std::vector<int64_t> count(static_cast<size_t>(ds.graph_labels.num_classes), 0);
      for (const int32_t c : ds.graph_labels.classes)
        if (c >= 0) ++count[static_cast<size_t>(c)];
      std::printf(", %lld graph classes:", static_cast<long long>(ds.graph_labels.num_classes));
      for (size_t c = 0; c < count.size(); ++c)
        std::printf(" %s=%lld",
                    c < ds.graph_labels.class_names.size() ? ds.graph_labels.class_names[c].c_str()
                                                           : std::to_string(c).c_str(),
                    static_cast<long long>(count[c]));
    }
    std::printf("\n");
  }
  std::printf("  edges           %lld directed as stored (%lld undirected pairs; %s)%s\n",
              static_cast<long long>(s.num_edges), static_cast<long long>(s.undirected_pairs),
              s.symmetric ? "symmetric" : "not symmetric", s.weighted ? ", weighted" : "");
  if (s.edge_dim > 0) std::printf("  edge features   %lld per edge\n", static_cast<long long>(s.edge_dim));
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
  j.field("num_graphs", ds.num_graphs()).field("num_graph_classes", ds.graph_labels.num_classes);
  j.field("num_nodes", s.num_nodes)
      .field("num_edges", s.num_edges)
      .field("undirected_pairs", s.undirected_pairs);
  j.field("symmetric", s.symmetric)
      .field("self_loops", s.self_loops)
      .field("isolated_nodes", s.isolated_nodes);
  j.field("weighted", s.weighted).field("edge_dim", s.edge_dim);
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

// The directory of an OGB binary dataset (raw/data.npz) named or given by `what`; nullopt for
// anything else. A named one is fetched first, as loading would.
std::optional<std::filesystem::path> ogb_binary_dir(const std::string& what, const Args& args, bool verify) {
  namespace fs = std::filesystem;
  if (fs::exists(what)) {
    if (fs::is_directory(what) && fs::exists(fs::path(what) / "raw" / "data.npz")) return fs::path(what);
    return std::nullopt;
  }
  const auto names = data::dataset_names();
  if (std::find(names.begin(), names.end(), what) == names.end()) return std::nullopt;
  const data::LoadOptions options = load_options_from(args, verify);
  const std::string format = options.format.empty() ? data::dataset_formats(what).front() : options.format;
  if (format != "ogb") return std::nullopt;
  const fs::path dir = data::fetch_dataset(what, options) / what / "ogb";
  if (fs::exists(dir / "raw" / "data.npz")) return dir;
  return std::nullopt;
}

void print_ogb_binary_info(const data::OgbBinaryInfo& info, bool json) {
  if (json) {
    JsonObject j;
    j.field("path", info.path).field("format", "ogb-binary");
    j.field("num_nodes", info.num_nodes).field("num_edges", info.num_edges);
    j.field("num_features", info.num_features).field("feature_dtype", info.feature_dtype);
    j.field("labelled", info.labelled).field("num_classes", info.num_classes);
    j.field("compressed_bytes", static_cast<int64_t>(info.compressed_bytes));
    j.field("bytes_to_load", static_cast<int64_t>(info.bytes_to_load(false)));
    for (const auto& [name, sizes] : info.splits)
      j.raw_field("split_" + name, std::string("[")
                                       .append(std::to_string(sizes[0]))
                                       .append(", ")
                                       .append(std::to_string(sizes[1]))
                                       .append(", ")
                                       .append(std::to_string(sizes[2]))
                                       .append("]"));
    std::cout << j.str() << "\n";
    return;
  }
  const auto human = [](uint64_t b) {
    char buf[32];
    if (b < 1'000'000)
      std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(b));
    else
      std::snprintf(buf, sizeof buf, "%.1f GB", static_cast<double>(b) / 1e9);
    return std::string(buf);
  };
  std::printf("%s (OGB binary layout; too large to load here: about %s in memory, %s allowed)\n",
              info.path.c_str(), human(info.bytes_to_load(false)).c_str(),
              human(data::default_load_limit()).c_str());
  std::printf("  nodes           %lld\n", static_cast<long long>(info.num_nodes));
  std::printf("  edges           %lld directed as stored\n", static_cast<long long>(info.num_edges));
  std::printf("  features        %lld (%s)\n", static_cast<long long>(info.num_features),
              info.feature_dtype.c_str());
  std::printf("  labels          %lld nodes labelled, %lld classes\n", static_cast<long long>(info.labelled),
              static_cast<long long>(info.num_classes));
  for (const auto& [name, sizes] : info.splits)
    std::printf("  split %-9s train %lld / val %lld / test %lld\n", name.c_str(),
                static_cast<long long>(sizes[0]), static_cast<long long>(sizes[1]),
                static_cast<long long>(sizes[2]));
}

}  // namespace

int run_dataset_info(std::span<const std::string> argv) {
  Args args("edgeattn dataset info",
            "Print a dataset's statistics. NAME is one of the registry's datasets (" + known_dataset_names() +
                "), downloaded when missing and checked against the manifest; PATH is a file or directory in "
                "any supported format.");
  add_dataset_source_options(args);
  args.flag("no-verify", "skip the sha256 check of a named dataset's files")
      .flag("json", "print one JSON object instead of text")
      .positional("NAME|PATH", "dataset name or path");
  if (!args.parse(argv)) {
    std::cout << args.help();
    return 0;
  }
  // OGB's binary layout (ogbn-papers100M) may be far larger than memory: then its metadata,
  // streamed, stands in for the statistics of a loaded dataset.
  if (const auto dir = ogb_binary_dir(args.positional_value(), args, !args.flag_set("no-verify"))) {
    const data::OgbBinaryInfo info = data::ogb_binary_info(*dir);
    if (info.bytes_to_load(false) > data::default_load_limit()) {
      print_ogb_binary_info(info, args.flag_set("json"));
      return 0;
    }
  }
  const data::Dataset ds = load_dataset_arg(args.positional_value(), args, !args.flag_set("no-verify"));
  const data::DatasetStats stats = data::describe(ds);
  if (args.flag_set("json"))
    std::cout << json_of(ds, stats) << "\n";
  else
    print_human(ds, stats);
  return 0;
}

namespace {

// "snap.stanford.edu" from "https://snap.stanford.edu/ogb/...".
std::string host_of(const std::string& url) {
  const size_t start = url.find("://");
  if (start == std::string::npos) return url;
  const size_t end = url.find('/', start + 3);
  return url.substr(start + 3, end == std::string::npos ? std::string::npos : end - start - 3);
}

}  // namespace

int run_dataset_download(std::span<const std::string> argv) {
  Args args("edgeattn dataset download",
            "Download a named dataset's missing files from where they are officially published, verify "
            "them against the manifest and place them in the download cache ($EDGEATTN_DATA, else "
            "~/.cache/edgeattn) or --root. Files already present are not fetched again; an interrupted "
            "download resumes. Names: " +
                known_dataset_names() + ".");
  args.option("format", "F", "", "the format to fetch (default: the dataset's first)")
      .flag("all-formats", "fetch every format of the dataset")
      .option("root", "DIR", "", "download into DIR instead of the cache")
      .positional("NAME", "dataset name");
  if (!args.parse(argv)) {
    std::cout << args.help();
    return 0;
  }
  const std::string name = args.positional_value();
  bool known = false;
  for (const std::string& n : data::dataset_names()) known = known || n == name;
  if (!known) throw UsageError("'" + name + "' is not a known dataset (" + known_dataset_names() + ")");
  if (args.flag_set("all-formats") && args.given("format"))
    throw UsageError("--format and --all-formats exclude each other");
  std::vector<std::string> formats = data::dataset_formats(name);
  if (!args.flag_set("all-formats")) formats = {args.given("format") ? args.str("format") : formats.front()};
  for (const std::string& format : formats) {
    data::LoadOptions options;
    options.root = args.str("root");
    options.format = format;
    options.log = log_to_stderr;
    const fs::path root = data::fetch_dataset(name, options);
    // Verify what is there now (a bundled or earlier copy too) and say where it is.
    int64_t files = 0, bytes = 0;
    for (const data::ManifestEntry& e : data::manifest()) {
      if (e.dataset != name || e.format != format || e.is_directory()) continue;
      const auto found = find_plain_or_gz(root / e.path);
      if (!found) continue;  // a README the loaders do not need
      data::verify_file(*found, e);
      ++files;
      bytes += static_cast<int64_t>(fs::file_size(*found));
    }
    std::printf("%s (%s): %s", name.c_str(), format.c_str(), (root / name / format).string().c_str());
    if (files > 0)
      std::printf("  (%lld files, %.1f MB, checksums verified where recorded)", static_cast<long long>(files),
                  bytes / 1e6);
    std::printf("\n");
  }
  return 0;
}

int run_dataset_list(std::span<const std::string> argv) {
  Args args("edgeattn dataset list",
            "List the named datasets: their formats, where each is on disk (searched in --root, else "
            "$EDGEATTN_DATA, else the bundled datasets/ and the download cache) or 'download' when it "
            "would be fetched on first use, its size where known, and where it comes from.");
  args.option("root", "DIR", "", "look only in DIR").flag("json", "print one JSON array instead of text");
  if (!args.parse(argv)) {
    std::cout << args.help();
    return 0;
  }
  std::vector<std::string> rows;
  if (!args.flag_set("json"))
    std::printf("%-18s %-10s %-9s %-10s %s\n", "name", "format", "status", "size", "source");
  for (const std::string& name : data::dataset_names()) {
    for (const std::string& format : data::dataset_formats(name)) {
      data::LoadOptions options;
      options.root = args.str("root");
      options.format = format;
      const std::optional<fs::path> where = data::locate_dataset(name, options);
      int64_t bytes = 0;
      bool size_known = true;
      std::string source;
      for (const data::ManifestEntry& e : data::manifest()) {
        if (e.dataset != name || e.format != format) continue;
        if (e.bytes < 0)
          size_known = false;
        else
          bytes += e.bytes;
        if (source.empty()) source = host_of(e.url);
      }
      const std::string status =
          where ? (where->string() == (fs::path(data::default_data_root())).string() ? "present" : "cached")
                : "download";
      char size[32];
      if (size_known)
        std::snprintf(size, sizeof size, "%.1f MB", bytes / 1e6);
      else
        std::snprintf(size, sizeof size, "?");
      if (args.flag_set("json")) {
        JsonObject j;
        j.field("name", name).field("format", format).field("status", status);
        j.field("path", where ? (*where / name / format).string() : std::string());
        j.field("bytes", size_known ? bytes : int64_t{-1}).field("source", source);
        rows.push_back(j.str());
      } else {
        std::printf("%-18s %-10s %-9s %-10s %s\n", name.c_str(), format.c_str(), status.c_str(), size,
                    source.c_str());
      }
    }
  }
  if (args.flag_set("json")) {
    std::string out = "[";
    for (size_t i = 0; i < rows.size(); ++i) out += (i ? "," : "") + rows[i];
    std::cout << out << "]\n";
  }
  return 0;
}

}  // namespace edgeattn::cli
