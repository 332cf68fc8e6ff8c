// Typed errors raised at edgeattn's API boundary.
//
// Every message names the operand (or file and line), what was expected and what was found, e.g.
//   attention_forward: value has shape [100, 8, 16], expected [num_src=120, heads=8, *]
// Kernels assume validated inputs; they never throw on the hot path.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace edgeattn {

/// Base of every exception edgeattn throws on purpose.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A tensor's rank or extents do not match what the operation requires.
class ShapeError : public Error {
 public:
  using Error::Error;
};

/// An option or scalar argument is out of its valid range (negative dropout, zero heads, ...).
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

/// A graph's structure is invalid: offsets not monotone, indices out of range, unsorted rows.
class GraphError : public Error {
 public:
  using Error::Error;
};

/// A file cannot be opened, read or written.
class IoError : public Error {
 public:
  using Error::Error;
};

/// A file's content does not follow its format; the message names the file and line or offset.
class ParseError : public Error {
 public:
  using Error::Error;
};

/// A file's bytes do not match the checksum recorded for it; the message names the file and both
/// digests.
class ChecksumError : public IoError {
 public:
  using IoError::IoError;
};

/// A device (the GPU of AttentionPath::cuda) is missing or failed: the message names the call and
/// the CUDA runtime's error.
class DeviceError : public Error {
 public:
  using Error::Error;
};

namespace detail {

/// Concatenates streamable arguments into one message string.
template <class... Args>
std::string message(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}

}  // namespace detail

/// Throws `E` with the concatenation of `args` as its message.
template <class E, class... Args>
[[noreturn]] void raise(Args&&... args) {
  throw E(detail::message(std::forward<Args>(args)...));
}

}  // namespace edgeattn
