// A data source that hands out the planner's worst case: every batch of the
// wrapped source extended to its dataset's max_tokens, with every position a
// real token (the pad positions get an ordinary text id and mask 1) except,
// where the model would then skip padding, the fewest positions at the end
// that make it skip.
//
// NOTE [Full batches]: the planner's activations count every position of a
// (B, max_tokens) batch as a token (docs/planner.md); a padded batch holds
// less (LAION pads to its longest caption; the model skips padding in its
// token-wise work when that pays, NOTE [Skipped padding] in
// backend/model/common.h), so the peak of a run on padded batches depends on
// the data. fsdp_peak_probe --full-batches measures the bound itself; the
// images, the number of images per sample and the leading tokens stay the
// wrapped source's, and the labels follow from the ids as usual.
//
// Thread-safety: as the wrapped source (one thread).
#pragma once

#include <memory>

#include "backend/data/data_source.h"
#include "backend/protocol/config/config_types.h"

namespace fs::bench {

std::unique_ptr<data::DataSource> fullBatches(std::unique_ptr<data::DataSource> inner,
                                              const protocol::TokensConfig& tokens, int64_t lmWidth);

}  // namespace fs::bench
