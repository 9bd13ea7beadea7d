// torch.save's archive of one IValue, written from C++: what LibTorch's
// torch::pickle_save writes, without its container type tags, so that Python's
// torch.load reads it with weights_only=True (its default since PyTorch 2.6).
// NOTE [Untagged pickles]. Stateless; safe from any thread.
#pragma once

#include <ATen/core/ivalue.h>

#include <vector>

namespace fs::runtime {

// The bytes of a zip archive holding `value` (dicts, lists, tuples, strings,
// numbers, booleans, None, tensors) as torch.save would hold the Python value.
// Throws c10::Error on values torch.save could not express (objects, futures).
std::vector<char> pickleForTorchLoad(const c10::IValue& value);

}  // namespace fs::runtime
