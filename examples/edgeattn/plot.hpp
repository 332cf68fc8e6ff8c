// Training curves as an SVG image (`edgeattn train --plot FILE`): loss on the left panel (train,
// validation), accuracy on the right (train, validation, test), epochs on the x axes, the kept
// (best) epoch marked. SVG is plain text any browser shows; no plotting library needed.
#pragma once

#include <string>
#include <vector>

#include "edgeattn/train/trainer.hpp"

namespace edgeattn::cli {

/// The SVG document for `history`; `title` goes on top.
std::string training_curves_svg(const std::vector<train::EpochStats>& history, int64_t best_epoch,
                                const std::string& title);

}  // namespace edgeattn::cli
