// The checkpoint's resume record (backend/protocol/wire/checkpoint_record.h)
// as the pickled dict a torch.save file holds under "flamingo_studio", on
// LibTorch's IValue: the engine's writer and reader walk the record's one
// field list (NOTE [Checkpoint records]). The inspector reads the same dict
// torch-free (backend/inspect/record_pyvalue.h).
//
//   top.insert("flamingo_studio", resumeToIValue(record));
//   auto record = resumeFromIValue(top.at("flamingo_studio"));  // errors name the field
//
// Thread-safety: pure functions.
#pragma once

#include <ATen/core/ivalue.h>

#include "backend/protocol/status.h"
#include "backend/protocol/wire/checkpoint_record.h"

namespace fs::checkpoint {

// A dict of str keys: ints, floats, strs, uint8 tensors (Bytes), lists, and
// a nested dict for the loss scaler.
c10::IValue resumeToIValue(const protocol::ResumeRecord& record);

// Errors (Corruption) name the field under "flamingo_studio" and what is
// wrong: "flamingo_studio.rng_own: 3 words, not 4".
protocol::StatusOr<protocol::ResumeRecord> resumeFromIValue(const c10::IValue& value);

}  // namespace fs::checkpoint
