// Internal: what the text readers (Matrix Market, edge lists, LINQS) share - turning parsed edges
// with optional weights into a Graph plus Dataset::edge_weight, and locating files that may be
// shipped gzip-compressed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "edgeattn/data/dataset.hpp"
#include "edgeattn/graph/build.hpp"

namespace edgeattn::data::detail {

/// What a pair's repeated copies weigh under Duplicates::merge: the first copy's weight, or the
/// sum of all copies' (scipy's coo -> csr, the reference for Matrix Market files).
enum class RepeatedWeights { first, sum };

/// The graph of edges src[k] -> dst[k] under `options`, and (when `weight` is non-empty, one per
/// input edge) the weight of every CSR edge in `edge_weight`: an input edge keeps its weight (under
/// Duplicates::merge the first copy's, or with RepeatedWeights::sum the copies' sum), a reverse edge
/// added by `symmetrize` takes the weight of the edge it mirrors, a self-loop added by
/// SelfLoops::add gets 1.
Graph build_weighted_graph(int64_t num_nodes, std::span<const int64_t> src, std::span<const int64_t> dst,
                           std::span<const float> weight, const BuildOptions& options,
                           std::vector<float>& edge_weight,
                           RepeatedWeights repeated = RepeatedWeights::first);
/// Same with 32-bit node ids.
Graph build_weighted_graph(int64_t num_nodes, std::span<const int32_t> src, std::span<const int32_t> dst,
                           std::span<const float> weight, const BuildOptions& options,
                           std::vector<float>& edge_weight,
                           RepeatedWeights repeated = RepeatedWeights::first);

/// For Duplicates::error: throws ParseError "<file>:<line>: ..." naming both lines of the first
/// repeated (src, dst) pair (the one whose second copy comes first), as build_graph would count it:
/// self-loops are ignored when `drop_self_loops`. `line[k]` is the line of edge k.
void check_no_repeated_edges(std::span<const int64_t> src, std::span<const int64_t> dst,
                             std::span<const int64_t> line, bool drop_self_loops, const std::string& file);
/// Same with 32-bit node ids.
void check_no_repeated_edges(std::span<const int32_t> src, std::span<const int32_t> dst,
                             std::span<const int64_t> line, bool drop_self_loops, const std::string& file);

/// Raises ParseError "<where>: ..." when a graph of num_nodes nodes and num_edges input edges
/// would need more memory than a load may take (default_load_limit: 3/4 of physical memory, or
/// $EDGEATTN_MAX_LOAD_BYTES): a header or a stray id that claims two billion nodes must not have
/// the process killed for memory. `nodes_from` says where the count comes from ("the size line
/// declares 2000000000 rows"), `hint` what to do (may be empty).
void check_graph_fits(const std::string& where, int64_t num_nodes, int64_t num_edges,
                      const std::string& nodes_from, const std::string& hint);

/// `path` if it exists, else `path` + ".gz" if that exists; IoError naming both otherwise.
std::filesystem::path existing_or_gz(const std::filesystem::path& path);

/// The file name without a trailing ".gz" and then without its extension ("web.mtx.gz" -> "web").
std::string stem_without_gz(const std::filesystem::path& path);

/// A SourceFile for `path` whose (decompressed) text has `bytes` bytes; sha256 left empty (the
/// registry computes checksums).
SourceFile source_file(const std::filesystem::path& path, size_t bytes);

}  // namespace edgeattn::data::detail
