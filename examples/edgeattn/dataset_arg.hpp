// How the tool's commands turn a NAME|PATH argument into a Dataset: a registry name (verified
// against the manifest and downloaded when missing; --format, --root and --offline apply) or a
// path in any supported format.
#pragma once

#include <string>

#include "args.hpp"
#include "edgeattn/data/dataset.hpp"
#include "edgeattn/data/registry.hpp"

namespace edgeattn::cli {

/// Declares --format F, --root DIR and --offline, the options of a named dataset.
void add_dataset_source_options(Args& args);

/// "amazon-computers, ..., pubmed": the registry's names, for help texts and errors.
std::string known_dataset_names();

/// Prints one step of a download on standard error: "edgeattn: downloading ...".
void log_to_stderr(const std::string& line);

/// LoadOptions from the options of add_dataset_source_options; download steps are told on
/// standard error ("edgeattn: downloading ...").
data::LoadOptions load_options_from(const Args& args, bool verify);

/// Throws UsageError when `what` is neither a known name nor an existing path, or when
/// --format/--root are given for a path. `map_features`: read an .npz path's dense features in
/// place (data::load_dataset_path); UsageError for a named dataset or another format.
/// `format_default`: the format of a named dataset when --format is not given (eval and predict:
/// the one the model was trained on); empty: the dataset's first.
data::Dataset load_dataset_arg(const std::string& what, const Args& args, bool verify,
                               bool map_features = false, const std::string& format_default = "");

/// A --split value of the form "random:P,V,T" or "random:P,V,T,SEED" (data::random_split: P
/// training nodes per class, V validation and T test nodes, SEED default 0) is added to
/// ds.splits under that name, so ds.split(spec) finds it and a model file that records the name
/// recreates the same split. Any other value is left for ds.split to look up. Throws UsageError
/// for a malformed random spec, and random_split's InvalidArgument (e.g. a class with fewer than
/// P nodes) prefixed with the option.
void add_split_spec(data::Dataset& ds, const std::string& spec);

}  // namespace edgeattn::cli
