#include "dataset_arg.hpp"

#include <filesystem>

#include "args.hpp"
#include "edgeattn/data/registry.hpp"

namespace edgeattn::cli {

data::Dataset load_dataset_arg(const std::string& what, const std::string& format, const std::string& root,
                               bool verify) {
  std::string names;
  bool known = false;
  for (const std::string& n : data::dataset_names()) {
    names += (names.empty() ? "" : ", ") + n;
    known = known || n == what;
  }
  if (known && !std::filesystem::exists(what)) {
    data::LoadOptions options;
    options.format = format;
    options.root = root;
    options.verify = verify;
    return data::load_dataset(what, options);
  }
  if (std::filesystem::exists(what)) {
    if (!format.empty() || !root.empty())
      throw UsageError("--format and --root apply to named datasets; '" + what + "' is a path");
    return data::load_dataset_path(what);
  }
  throw UsageError("'" + what + "' is neither a known dataset (" + names +
                   ") nor an existing file or directory");
}

}  // namespace edgeattn::cli
