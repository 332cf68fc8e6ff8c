// Fuzzes the streaming .npz reader (data/npz_stream.hpp): the input is an archive, handed over as
// an in-memory file (memfd, /proc/self/fd/N) since the reader maps a path; the catalog is read
// and every member streamed to its end in uneven chunks, with a skip.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "edgeattn/core/error.hpp"
#include "edgeattn/data/npz_stream.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = memfd_create("npz_stream_fuzz", 0);
  if (fd < 0) return 0;
  size_t written = 0;
  while (written < size) {
    const ssize_t n = write(fd, data + written, size - written);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  try {
    for (const auto& m : edgeattn::data::npz_catalog(path)) {
      edgeattn::data::NpyStream s(path, m.key);
      std::vector<std::byte> buf(777);
      if (s.remaining() > 10) s.skip(10);
      while (s.read(buf) > 0) {
      }
    }
  } catch (const edgeattn::Error&) {
  }
  close(fd);
  return 0;
}
