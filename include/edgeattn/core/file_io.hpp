// Whole-file reads (with transparent gzip) and atomic writes.
//
// Every loader reads through `read_file`, so any text or binary format also loads from a `.gz`
// copy of its file (gzip is recognised by its magic bytes, not by the name). Every writer goes
// through `write_file_atomic`: the bytes go to a temporary file in the same directory, which is
// flushed and then renamed over the target, so a crash never leaves a half-written file and a
// reader never sees one.
//
// Example:
//   std::string text = edgeattn::read_file("datasets/cora/linqs/cora.cites");
//   edgeattn::write_file_atomic("model.bin", bytes);
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace edgeattn {

/// The file's bytes; gzip files (one or more members) are decompressed. Throws IoError naming the
/// path when it cannot be opened or read, ParseError naming the path and compressed offset when
/// the gzip stream is corrupt or truncated.
std::string read_file(const std::filesystem::path& path);

/// `path` when it is an existing file, else `path` + ".gz" when that exists, else nullopt: how every
/// loader finds a file that may be stored compressed.
std::optional<std::filesystem::path> find_plain_or_gz(const std::filesystem::path& path);

/// Decompresses a gzip stream held in memory. `what` names the source in errors.
std::string gunzip(std::string_view compressed, const std::string& what);

/// True when `bytes` starts with the gzip magic 1f 8b.
bool is_gzip(std::string_view bytes);

/// Writes `bytes` to `path` atomically (temporary file + fsync + rename). Throws IoError naming
/// the path. Existing content at `path` is untouched when the write fails. A file that exists
/// keeps its permission bits (and, written as root, its owner); one this process may not write
/// (access(2) W_OK: a read-only file, unless root) is refused, not replaced. A symbolic link is
/// written through (the file it names is replaced, the link stays). A character device or FIFO
/// (/dev/null, /dev/stdout on a pipe) is written to directly, without a temporary file.
void write_file_atomic(const std::filesystem::path& path, std::string_view bytes);

}  // namespace edgeattn
