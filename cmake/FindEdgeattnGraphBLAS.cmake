# Finds SuiteSparse:GraphBLAS (Debian: libgraphblas-dev; header GraphBLAS.h, library graphblas) for
# the peer benchmark's GraphBLAS baseline (`edgeattn bench graphblas`). Optional: without it the
# tool builds and that one command reports that it was built without GraphBLAS.
# Sets EDGEATTN_GRAPHBLAS_FOUND and the interface target `edgeattn_graphblas_lib`.
find_path(EDGEATTN_GRAPHBLAS_INCLUDE_DIR GraphBLAS.h PATH_SUFFIXES suitesparse)
find_library(EDGEATTN_GRAPHBLAS_LIBRARY NAMES graphblas)
if(EDGEATTN_GRAPHBLAS_INCLUDE_DIR AND EDGEATTN_GRAPHBLAS_LIBRARY)
  set(EDGEATTN_GRAPHBLAS_FOUND TRUE)
  message(STATUS "edgeattn GraphBLAS: ${EDGEATTN_GRAPHBLAS_LIBRARY} (headers ${EDGEATTN_GRAPHBLAS_INCLUDE_DIR})")
  add_library(edgeattn_graphblas_lib INTERFACE)
  target_include_directories(edgeattn_graphblas_lib SYSTEM INTERFACE ${EDGEATTN_GRAPHBLAS_INCLUDE_DIR})
  target_link_libraries(edgeattn_graphblas_lib INTERFACE ${EDGEATTN_GRAPHBLAS_LIBRARY})
else()
  set(EDGEATTN_GRAPHBLAS_FOUND FALSE)
  message(STATUS "edgeattn GraphBLAS: not found (apt-get install libgraphblas-dev); "
                 "`edgeattn bench graphblas` is disabled")
endif()
