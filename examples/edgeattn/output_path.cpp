#include "output_path.hpp"

#include <stdlib.h>  // mkstemp
#include <unistd.h>  // close, unlink

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

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

}  // namespace edgeattn::cli
