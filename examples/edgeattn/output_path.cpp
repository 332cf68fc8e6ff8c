#include "output_path.hpp"

#include <stdlib.h>  // mkstemp
#include <unistd.h>  // close, unlink

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <vector>

namespace edgeattn::cli {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void bad(const std::string& option, const std::string& path, const std::string& reason) {
  throw UsageError("--" + option + " is '" + path + "': " + reason);
}

std::string quoted(const fs::path& p) { return std::string("'").append(p.string()).append("'"); }

}  // namespace

void check_output_path(const std::string& option, const std::string& path) {
  if (path.empty()) throw UsageError("--" + option + " needs a file name, got an empty one");
  const fs::path target(path);
  std::error_code ec;
  const fs::file_status status = fs::status(target, ec);  // follows symbolic links
  if (fs::is_directory(status)) bad(option, path, "expected a file name, found an existing directory");
  if (fs::exists(status) && !fs::is_regular_file(status))
    bad(option, path, "expected a regular file or a new name, found an existing special file");

  // The directory the file goes into; "x.model" and "./x.model" mean the current directory.
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const fs::file_status dir_status = fs::status(dir, ec);
  if (!fs::exists(dir_status))
    bad(option, path, "expected an existing directory, but directory " + quoted(dir) + " does not exist");
  if (!fs::is_directory(dir_status))
    bad(option, path, "expected " + quoted(dir) + " to be a directory, found a file");

  // Create and remove a file: the only test that sees read-only mounts, ACLs and root alike.
  std::string probe = (dir / ".edgeattn-write-check-XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    const int err = errno;
    bad(option, path,
        "expected a writable directory, but files cannot be created in " + quoted(dir) + " (" +
            std::strerror(err) + ")");
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

void check_output_options(const Args& args, std::initializer_list<const char*> options) {
  for (const char* option : options)
    if (args.given(option)) check_output_path(option, args.str(option));
}

namespace {

// The file an option's value names: FILE of an .npz's "FILE:MEMBER".
std::string file_part(const std::string& value) {
  const size_t colon = value.rfind(':');
  if (colon != std::string::npos && value.substr(0, colon).ends_with(".npz")) return value.substr(0, colon);
  return value;
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) {
    const bool same = fs::equivalent(a, b, ec);
    if (!ec) return same;
  }
  const fs::path ca = fs::weakly_canonical(fs::absolute(a, ec), ec);
  const fs::path cb = fs::weakly_canonical(fs::absolute(b, ec), ec);
  return !ca.empty() && ca == cb;
}

}  // namespace

void check_distinct_paths(const Args& args, std::initializer_list<const char*> outputs,
                          std::initializer_list<const char*> inputs,
                          std::initializer_list<std::pair<const char*, const char*>> allowed) {
  std::vector<const char*> given_outputs;
  for (const char* o : outputs)
    if (args.given(o)) given_outputs.push_back(o);
  for (size_t i = 0; i < given_outputs.size(); ++i)
    for (size_t j = i + 1; j < given_outputs.size(); ++j)
      if (same_file(args.str(given_outputs[i]), args.str(given_outputs[j])))
        throw UsageError("--" + std::string(given_outputs[i]) + " and --" + given_outputs[j] +
                         " both name '" + args.str(given_outputs[j]) +
                         "': one output would replace the other; give each its own file");
  for (const char* o : given_outputs)
    for (const char* in : inputs) {
      if (!args.given(in)) continue;
      bool ok = false;
      for (const auto& [ao, ai] : allowed) ok = ok || (std::string(ao) == o && std::string(ai) == in);
      const std::string input = file_part(args.str(in));
      std::error_code ec;
      if (ok || !fs::exists(input, ec) || fs::is_directory(input, ec)) continue;  // a name, or a directory
      if (same_file(args.str(o), input))
        throw UsageError("--" + std::string(o) + " is '" + args.str(o) + "', the file --" + in +
                         " reads: writing it would replace your input; give the output another name");
    }
}

}  // namespace edgeattn::cli
