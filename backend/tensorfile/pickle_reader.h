// A safe unpickler for what torch.save (and other tools) put in data.pkl.
//
// It interprets pickle protocols 0-5 (all opcodes except the extension
// registry EXT1/2/4 and protocol 5's out-of-band buffers) into a PyValue tree
// and never executes anything: globals are looked up in a fixed table of
// torch and builtin reconstructors (torch_rebuild.h); every other class or
// function becomes a PyKind::kObject / kGlobal value.
//
// Torch specifics: persistent ids ('storage', <storage type>, key, location,
// numel) become storage references resolved through PickleOptions::
// resolveStorage; _rebuild_tensor / _v2 / _v3 / _rebuild_parameter(_with_state)
// / _rebuild_from_type_v2 / _rebuild_meta_tensor_no_storage become kTensor
// values whose extent is checked against their storage.
//
// NOTE [Hostile pickles]
// Every length, memo index, stack access and mark is checked; the value graph
// is checked to be acyclic and at most kMaxPyDepth deep (cyclic graphs are
// rejected: the readers of this library walk trees); opcodes that copy
// (set(list), _codecs.encode, ...) are charged against a work budget
// proportional to the input, so a small file cannot make the reader run for
// long or allocate much more than its size. Any violation is a Corruption or
// Unsupported status naming the source, the byte offset and the opcode.
//
// Thread-safety: unpickle() is reentrant; the resolver is called on the
// calling thread.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "backend/tensorfile/py_value.h"

namespace fs::tensorfile {

// Where a storage's bytes are: a record of the zip, as a byte range of the file.
struct StorageRecord {
  std::string entry;  // "archive/data/0"
  std::uint64_t fileOffset = 0;
  std::uint64_t byteSize = 0;
  bool readable = true;  // false: present but compressed/encrypted
};
// Called once per distinct storage key; an error status aborts unpickling.
using StorageResolver = std::function<StatusOr<StorageRecord>(const std::string& key)>;

struct PickleOptions {
  std::string sourceName = "pickle";  // prefixes messages, e.g. "ckpt.pt:archive/data.pkl"
  // Null: storages are kept with only their key (readable = false).
  StorageResolver resolveStorage;
  // Work units (one per opcode or copied item, a few per dict/set insert);
  // 0: 16 per input byte + 4M. Legitimate torch.save pickles use a few per byte.
  std::uint64_t workBudget = 0;
};

StatusOr<PyValuePtr> unpickle(std::span<const std::byte> data, const PickleOptions& options = {});

}  // namespace fs::tensorfile
