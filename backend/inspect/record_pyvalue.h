// The checkpoint's resume record (backend/protocol/wire/checkpoint_record.h)
// read torch-free from the pickled "flamingo_studio" dict of a torch.save
// file: the same field list the engine writes it with (NOTE [Checkpoint
// records]); Bytes fields are uint8 tensors whose bytes `tensorBytes` reads
// from the file by entry ("flamingo_studio.rng_torch_cuda.0").
//
// Thread-safety: pure function; `tensorBytes` is called on the calling thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend/protocol/status.h"
#include "backend/protocol/wire/checkpoint_record.h"
#include "backend/tensorfile/py_value.h"

namespace fs::inspect {

using TensorBytes = std::function<protocol::StatusOr<std::vector<std::uint8_t>>(const std::string& entry)>;

// Errors (Corruption) name the field: "flamingo_studio.rng_own: 3 words, not 4".
protocol::StatusOr<protocol::ResumeRecord> resumeFromPyValue(const tensorfile::PyValue& value,
                                                             const TensorBytes& tensorBytes);

}  // namespace fs::inspect
