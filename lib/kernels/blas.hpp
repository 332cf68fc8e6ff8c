// Every BLAS call in edgeattn runs inside a oneTBB task on its own block, so BLAS itself must be
// single-threaded. The build links Debian's serial OpenBLAS (with a RUNPATH to it); this guard
// also covers binaries that end up with the threaded OpenBLAS at run time (e.g. a Python
// extension whose loader resolves libopenblas.so.0 through the system alternatives): it pins
// that library to one thread once, before the first GEMM.
#pragma once

namespace edgeattn::kernels {

void ensure_single_threaded_blas();

}  // namespace edgeattn::kernels
