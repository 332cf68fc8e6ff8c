#include "dataset_arg.hpp"

#include <cstdio>
#include <filesystem>

#include "edgeattn/data/registry.hpp"
#include "edgeattn/data/splits.hpp"

namespace edgeattn::cli {

void add_dataset_source_options(Args& args) {
  args.option("format", "F", "",
              "format of a named dataset (default: its first; e.g. planetoid, linqs, npz, ogb)")
      .option("root", "DIR", "",
              "data root for named datasets (default: $EDGEATTN_DATA, else the bundled datasets/ and the "
              "download cache ~/.cache/edgeattn)")
      .flag("offline", "never download: use only files already on disk (also: EDGEATTN_OFFLINE=1)");
}

std::string known_dataset_names() {
  std::string names;
  for (const std::string& n : data::dataset_names()) names += (names.empty() ? "" : ", ") + n;
  return names;
}

void log_to_stderr(const std::string& line) { std::fprintf(stderr, "edgeattn: %s\n", line.c_str()); }

data::LoadOptions load_options_from(const Args& args, bool verify) {
  data::LoadOptions options;
  options.format = args.str("format");
  options.root = args.str("root");
  options.verify = verify;
  if (args.flag_set("offline")) options.download_options.offline = true;
  options.log = log_to_stderr;
  return options;
}

data::Dataset load_dataset_arg(const std::string& what, const Args& args, bool verify, bool map_features,
                               const std::string& format_default) {
  bool known = false;
  for (const std::string& n : data::dataset_names()) known = known || n == what;
  if (known && !std::filesystem::exists(what)) {
    if (map_features)
      throw UsageError("--mmap-features reads an .npz file's features in place; '" + what +
                       "' is a named dataset (give its features as a float32 .npy with --features FILE)");
    data::LoadOptions options = load_options_from(args, verify);
    if (!args.given("format") && !format_default.empty()) options.format = format_default;
    return data::load_dataset(what, options);
  }
  if (std::filesystem::exists(what)) {
    if (args.given("format") || args.given("root"))
      throw UsageError("--format and --root apply to named datasets; '" + what + "' is a path");
    if (map_features && (std::filesystem::is_directory(what) || !what.ends_with(".npz")))
      throw UsageError("--mmap-features reads an .npz file's features in place; '" + what +
                       "' is not an .npz file (give its features as a float32 .npy with --features FILE)");
    return data::load_dataset_path(what, map_features);
  }
  throw UsageError("'" + what + "' is neither a known dataset (" + known_dataset_names() +
                   ") nor an existing file or directory");
}

void add_split_spec(data::Dataset& ds, const std::string& spec) {
  const std::string prefix = "random:";
  if (!spec.starts_with(prefix) || ds.splits.contains(spec)) return;
  const std::string usage = "--split " + spec +
                            ": expected random:P,V,T or random:P,V,T,SEED (P training nodes per class, "
                            "V validation and T test nodes, each an integer >= 0)";
  std::string bad;
  const std::optional<std::vector<int64_t>> list =
      integer_list(std::string_view(spec).substr(prefix.size()), 0, &bad);
  if (!list) throw UsageError(usage + "; '" + bad + "' is not one");
  const std::vector<int64_t>& v = *list;
  if (v.size() != 3 && v.size() != 4)
    throw UsageError(usage + "; got " + std::to_string(v.size()) + " numbers");
  try {
    ds.splits[spec] =
        data::random_split(ds.labels, v[0], v[1], v[2], v.size() == 4 ? static_cast<uint64_t>(v[3]) : 0);
  } catch (const InvalidArgument& e) {
    throw UsageError("--split " + spec + ": " + e.what());
  }
}

}  // namespace edgeattn::cli
