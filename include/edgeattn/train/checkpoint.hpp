// Model files: named float32 tensors plus a metadata string, in a versioned binary format with a
// SHA-256 checksum, written atomically.
//
// Layout (little-endian):
//   "EATNMODL"  u32 version (=1)  u32 flags (=0)
//   u64 metadata bytes, metadata (UTF-8; the tool stores the model configuration as JSON)
//   u64 tensor count, then per tensor: u32 name bytes, name, u32 rank, i64 extents[rank],
//                                     f32 values[numel]
//   32-byte SHA-256 of everything before it
//
// Loading checks the checksum first (so a truncated or corrupted file is a ChecksumError naming
// the file, never garbage weights), then the structure (ParseError naming the byte offset), then,
// when loading into a model, that names and shapes match exactly (ShapeError / InvalidArgument
// naming the parameter).
//
// Example:
//   edgeattn::train::save_parameters("gat.model", model.parameters(), config_json);
//   edgeattn::train::Checkpoint c = edgeattn::train::load_checkpoint("gat.model");
//   edgeattn::train::load_parameters(c, model.parameters());
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "edgeattn/autograd/tape.hpp"
#include "edgeattn/core/tensor.hpp"
#include "edgeattn/train/trainer.hpp"

namespace edgeattn::train {

inline constexpr uint32_t kCheckpointVersion = 1;

struct Checkpoint {
  std::string metadata;
  std::vector<std::pair<std::string, Tensor>> tensors;  // in file order

  /// The tensor called `name`; InvalidArgument listing the names when absent.
  const Tensor& get(const std::string& name) const;
};

/// Serialises to bytes / parses bytes (`what` names the source in errors).
std::string serialize_checkpoint(const Checkpoint& checkpoint);
Checkpoint parse_checkpoint(std::string_view bytes, const std::string& what);

/// Atomic write (temporary file + rename) / read with full verification.
void save_checkpoint(const std::filesystem::path& path, const Checkpoint& checkpoint);
Checkpoint load_checkpoint(const std::filesystem::path& path);

/// Saves the parameters' values under their names.
void save_parameters(const std::filesystem::path& path, const std::vector<autograd::Parameter*>& parameters,
                     const std::string& metadata);
/// Copies the checkpoint's tensors into `parameters`, which must match one to one by name and
/// shape (a training checkpoint's optimiser and early-stopping tensors, named with a ':', are
/// not parameters and are skipped). Throws InvalidArgument naming a missing or extra parameter,
/// ShapeError naming a shape mismatch; parameters are untouched unless everything matches.
void load_parameters(const Checkpoint& checkpoint, const std::vector<autograd::Parameter*>& parameters);

/// A training checkpoint (resume a run with TrainConfig::resume): a model file (the parameters
/// under their names, so eval and predict read it as a model) that also holds the optimiser's
/// moments ("adam.m:<name>", "adam.v:<name>") and the early-stopping snapshot ("best:<name>"),
/// with the rest of the state as a last metadata line ("training_state ...", numbers written
/// exactly). `metadata` must not end with such a line.
void save_training_state(const std::filesystem::path& path,
                         const std::vector<autograd::Parameter*>& parameters, const TrainingState& state,
                         const std::string& metadata);

struct LoadedTrainingState {
  std::string metadata;  ///< as given to save_training_state
  TrainingState state;
};
/// Loads the parameters' values (as load_parameters) and the state from a file written by
/// save_training_state. ParseError naming the file when it is a plain model file or its state
/// line is malformed; InvalidArgument / ShapeError as load_parameters.
LoadedTrainingState load_training_state(const std::filesystem::path& path,
                                        const std::vector<autograd::Parameter*>& parameters);
/// The same from a checkpoint already loaded (e.g. to check its metadata first); `what` names it.
LoadedTrainingState load_training_state(const Checkpoint& checkpoint, const std::string& what,
                                        const std::vector<autograd::Parameter*>& parameters);

}  // namespace edgeattn::train
