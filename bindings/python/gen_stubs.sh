#!/usr/bin/env bash
# Regenerates src/edgeattn/_edgeattn.pyi from the built module (run after changing module.cpp):
#   bindings/python/gen_stubs.sh [build/release/python]
# nanobind.stubgen writes the exception classes as an import from `edgeattn` (their __module__);
# they are rewritten as class definitions so the stub stands alone.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
pkg=${1:-../../build/release/python}
stub=src/edgeattn/_edgeattn.pyi
PYTHONPATH=$pkg ../../.venv/bin/python -m nanobind.stubgen -q -m edgeattn._edgeattn -o "$stub"
../../.venv/bin/python - "$stub" <<'PY'
import re, sys
path = sys.argv[1]
text = open(path).read()
classes = '''class Error(Exception):
    """Base of every edgeattn error."""

class ShapeError(Error, ValueError):
    """A tensor's rank or extents do not match what the operation requires."""

class InvalidArgument(Error, ValueError):
    """An option, dtype or layout is out of its valid range."""

class GraphError(Error, ValueError):
    """A graph's structure is invalid (indices out of range, ...)."""

class IoError(Error, OSError):
    """A file cannot be opened, read or written."""

class ParseError(Error, ValueError):
    """A file's content does not follow its format."""

class ChecksumError(IoError):
    """A file's bytes do not match the checksum recorded for it."""

class DownloadError(IoError):
    """A file could not be downloaded: offline, unreachable, an HTTP error such as 404, a stalled server, a full disk or an interrupted transfer (the message says which and names the URL)."""

class DeviceError(Error, RuntimeError):
    """The GPU of path='cuda' is missing or failed (built without CUDA, no driver, no device, or a CUDA runtime error, which the message names)."""
'''
text, n = re.subn(r"from edgeattn import \([^)]*\)\n", classes, text)
assert n == 1, "stubgen output changed: no 'from edgeattn import (...)' block"
open(path, "w").write(text)
PY
