// Node features read in place from a file (memory-mapped), for graphs whose features exceed RAM.
//
// map_features maps a float32 [N, F] array: an .npy file, or a member of an .npz archive stored
// uncompressed (np.savez, or edgeattn's write_npz, which aligns every member's data to 64 bytes).
// Nothing is read up front: a row's pages are read from the file when the row is first used and
// the kernel evicts them again under memory pressure (they are clean file pages), so a training
// run holds the rows it touches, not the file. Mini-batch training (neighbour sampling) gathers
// only its batch's input rows; a whole-graph forward (evaluation) streams the rows once.
//
// The mapping is private and copy-on-write: writing a row changes this process's copy of its
// pages, never the file. normalize_features refuses mapped features for that reason (it would
// write every row); Features copies share the mapping (data/dataset.hpp: Features::is_mapped).
//
// What can be mapped: dtype '<f4' (little-endian float32), C order, two dimensions, data starting
// at a multiple of 4 bytes and lying wholly inside the file. Anything else is a ParseError naming
// the file (and member) with what was found and how to convert it, e.g. for float64 data:
//   np.save("x.npy", np.load("x64.npy", mmap_mode="r").astype("<f4"))
// A gzip-compressed file or a deflated npz member (np.savez_compressed) cannot be mapped either.
//
// Example (mini-batch training on features larger than memory):
//   data::Dataset ds = data::load_npz("graph.npz", {.map_features = true});  // attr_matrix mapped
//   // or: ds.features = data::map_features("features.npy");
//   ds.features.is_mapped();  // true; ds.features.dense() is a [N, F] Tensor over the file
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

#include "edgeattn/data/dataset.hpp"

namespace edgeattn::data {

/// Maps the float32 [N, F] features of `path`: an .npy file, or the member `member` (its key,
/// without ".npy"; default "attr_matrix") of an .npz. IoError when the file cannot be opened or
/// mapped; ParseError (naming the file, the member and the field) when it is not an .npy or .npz
/// file, the member is missing or deflated, or the array is not C-order float32 [N, F] in place;
/// InvalidArgument when `member` is given for an .npy file.
Features map_features(const std::filesystem::path& path, const std::string& member = "");

/// Asks the kernel to start reading the pages of `rows` of mapped features now, all at once and
/// in file order (madvise MADV_WILLNEED over the coalesced page ranges), so that the gather that
/// follows finds them in memory instead of faulting them in one synchronous read at a time. A
/// no-op for features that are not mapped. nn::Model's mini-batch forward calls it for a batch's
/// input rows. InvalidArgument for a row out of range.
void prefetch_rows(const Features& features, std::span<const int64_t> rows);

}  // namespace edgeattn::data
