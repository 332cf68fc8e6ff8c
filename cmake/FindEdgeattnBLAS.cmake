# Finds OpenBLAS and exposes it as the interface target `edgeattn_blas`.
#
# Every parallel loop in edgeattn is a oneTBB loop, and each task calls BLAS on its own block, so
# BLAS must run single-threaded inside many threads at once. Debian's *serial* OpenBLAS
# (libopenblas0-serial, 0.3.21) is built without USE_LOCKING and is NOT safe to call from several
# threads concurrently (its shared work buffers race; we saw wrong GEMM results). The pthread build
# is thread-safe, so we link it explicitly and pin it to one thread at first use
# (lib/kernels/blas.cpp: openblas_set_num_threads(1)).
find_path(EDGEATTN_CBLAS_INCLUDE_DIR cblas.h
  PATHS /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/openblas /usr/include
  NO_DEFAULT_PATH)
find_library(EDGEATTN_OPENBLAS
  NAMES openblas
  PATHS /usr/lib/x86_64-linux-gnu/openblas-pthread /usr/lib/openblas-pthread
  NO_DEFAULT_PATH)
if(NOT EDGEATTN_CBLAS_INCLUDE_DIR OR NOT EDGEATTN_OPENBLAS)
  message(FATAL_ERROR
    "edgeattn needs OpenBLAS (pthread build) and its cblas.h: apt-get install libopenblas-dev "
    "(or run scripts/setup.sh). Found include='${EDGEATTN_CBLAS_INCLUDE_DIR}' lib='${EDGEATTN_OPENBLAS}'.")
endif()
message(STATUS "edgeattn BLAS: ${EDGEATTN_OPENBLAS} (headers ${EDGEATTN_CBLAS_INCLUDE_DIR})")
add_library(edgeattn_blas INTERFACE)
target_include_directories(edgeattn_blas SYSTEM INTERFACE ${EDGEATTN_CBLAS_INCLUDE_DIR})
target_link_libraries(edgeattn_blas INTERFACE ${EDGEATTN_OPENBLAS})
