// Output paths checked before the work starts.
//
// A command that writes files (train --save/--plot/--attention-out, predict --out, bench
// write-inputs --out) checks every output path right after parsing its arguments, before any data
// is loaded: a typo in a directory name must cost a second, not a finished training run. A bad
// path raises UsageError (exit status 2) naming the option, the path, what was expected and what
// was found.
//
// Example:
//   if (!args.parse(argv)) { ... }
//   check_output_options(args, {"save", "plot", "attention-out"});   // only those that were given
#pragma once

#include <initializer_list>
#include <string>
#include <utility>

#include "args.hpp"

namespace edgeattn::cli {

/// Checks that `path`, the value of `--option`, names a file the command can write: the path is
/// not empty and not an existing directory or other non-regular file (files are written to a
/// temporary file beside them and renamed over them), and its directory (the current directory
/// when the path has none) exists, is a directory, and is writable. Writability is tested by
/// creating and removing a temporary file there, since access(2) says yes to root on a read-only
/// mount. Throws UsageError naming `--option`, `path` and the reason.
void check_output_path(const std::string& option, const std::string& path);

/// check_output_path for each of `options` that was given on the command line.
void check_output_options(const Args& args, std::initializer_list<const char*> options);

/// Checks, among the options given, that no two of `outputs` name the same file, and that no
/// output names the same file as one of `inputs` (a user's dataset, features or model would be
/// replaced by the result). Paths are the same file when both exist and are one file
/// (filesystem::equivalent: links and "./x" are "x"), or when their normalised absolute paths
/// are equal. An input's value may be a name rather than a path (--dataset cora) or FILE:MEMBER
/// of an .npz (--features); only the file part counts. A pair in `allowed` (output, input) may
/// name one file: train --checkpoint F --resume F continues the same checkpoint. Throws
/// UsageError naming both options and the path.
void check_distinct_paths(const Args& args, std::initializer_list<const char*> outputs,
                          std::initializer_list<const char*> inputs,
                          std::initializer_list<std::pair<const char*, const char*>> allowed = {});

}  // namespace edgeattn::cli
