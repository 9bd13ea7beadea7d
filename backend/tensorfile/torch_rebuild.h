// Internal to the unpickler: what GLOBAL, REDUCE, NEWOBJ, BUILD and persistent
// ids mean for the classes and functions torch.save files use. Nothing is
// imported or executed: a fixed table maps names to value constructors, and
// any other callable yields a kObject holding its name and arguments.
//
//   torch._utils._rebuild_tensor(_v2|_v3)       -> kTensor (extent checked)
//   torch._utils._rebuild_parameter(_with_state) -> kTensor, isParameter
//   torch._tensor._rebuild_from_type_v2          -> the wrapped call's value
//   torch._utils._rebuild_meta_tensor_no_storage -> kTensor, isMeta
//   collections.OrderedDict, builtins.set / frozenset / bytes / bytearray,
//   _codecs.encode, torch.Size, torch.device, torch.<dtype>,
//   torch.serialization._get_layout               -> plain values
//
// Python 2 module names (__builtin__, copy_reg) are read as their Python 3 names.
#pragma once

#include <string>

#include "backend/tensorfile/pickle_heap.h"

namespace fs::tensorfile::detail {

// GLOBAL / STACK_GLOBAL: a kDtype for torch dtypes, else a kGlobal.
StatusOr<PyValuePtr> makeGlobal(PickleHeap& heap, std::string module, const std::string& name);
// REDUCE (callable(*args)). REQUIRES: args is a tuple.
StatusOr<PyValuePtr> callGlobal(PickleHeap& heap, const PyValue& callable, const PyValue& args);
// NEWOBJ / NEWOBJ_EX (cls.__new__(cls, *args, **kwargs)); kwargs may be null.
StatusOr<PyValuePtr> newObject(PickleHeap& heap, const PyValue& cls, const PyValue& args, PyValuePtr kwargs);
// BUILD (obj.__setstate__(state)).
Status buildObject(PickleHeap& heap, PyValue& obj, PyValuePtr state);

// --- torch_tensors.cpp
// BINPERSID / PERSID: torch's ('storage', type, key, location, numel).
StatusOr<PyValuePtr> persistentLoad(PickleHeap& heap, const PyValue& pid);
// torch._utils._rebuild_tensor (version 1), _v2, _v3; `fn` names it in messages.
StatusOr<PyValuePtr> rebuildTensor(PickleHeap& heap, const PyValue& args, int version, const std::string& fn);
StatusOr<PyValuePtr> rebuildMetaTensor(PickleHeap& heap, const PyValue& args, const std::string& fn);
// A copy of the tensor `data` marked as an nn.Parameter.
StatusOr<PyValuePtr> asParameter(PickleHeap& heap, const PyValue* data, bool requiresGrad,
                                 const std::string& fn);

// --- argument helpers
std::string describe(const PyValue* v);                    // kind name, or "nothing"
const PyValue* argAt(const PyValue& args, std::size_t i);  // nullptr past the end
StatusOr<bool> boolArg(PickleHeap& heap, const PyValue* v, const std::string& what);

}  // namespace fs::tensorfile::detail
