# Finds Debian's single-threaded OpenBLAS (package libopenblas0-serial) and exposes it as the
# interface target `edgeattn_blas`. We link the serial build on purpose: every parallel loop in
# edgeattn is a oneTBB loop, and each task calls BLAS on its own block. A threaded BLAS inside
# TBB tasks would oversubscribe the cores and make results depend on the thread count.
find_path(EDGEATTN_CBLAS_INCLUDE_DIR cblas.h
  PATHS /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/openblas /usr/include
  NO_DEFAULT_PATH)
find_library(EDGEATTN_OPENBLAS_SERIAL
  NAMES libopenblas.so.0 openblas
  PATHS /usr/lib/x86_64-linux-gnu/openblas-serial /usr/lib/openblas-serial
  NO_DEFAULT_PATH)
if(NOT EDGEATTN_CBLAS_INCLUDE_DIR OR NOT EDGEATTN_OPENBLAS_SERIAL)
  message(FATAL_ERROR
    "edgeattn needs the serial OpenBLAS and its cblas.h: apt-get install libopenblas-dev libopenblas0-serial "
    "(or run scripts/setup.sh). Found include='${EDGEATTN_CBLAS_INCLUDE_DIR}' lib='${EDGEATTN_OPENBLAS_SERIAL}'.")
endif()
message(STATUS "edgeattn BLAS: ${EDGEATTN_OPENBLAS_SERIAL} (headers ${EDGEATTN_CBLAS_INCLUDE_DIR})")
add_library(edgeattn_blas INTERFACE)
target_include_directories(edgeattn_blas SYSTEM INTERFACE ${EDGEATTN_CBLAS_INCLUDE_DIR})
target_link_libraries(edgeattn_blas INTERFACE ${EDGEATTN_OPENBLAS_SERIAL})
