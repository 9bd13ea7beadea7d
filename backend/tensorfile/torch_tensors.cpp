// Torch's tensor, parameter and storage reconstructors (see torch_rebuild.h).
#include "backend/tensorfile/byte_io.h"
#include "backend/tensorfile/torch_rebuild.h"

namespace fs::tensorfile::detail {
namespace {

std::string shapeText(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

StatusOr<std::vector<std::int64_t>> intList(PickleHeap& heap, const PyValue* v, const std::string& what) {
  if (!v || !v->isSequence())
    return heap.corrupt(what + " is a " + describe(v) + ", expected a tuple of ints");
  if (v->items.size() > 64)
    return heap.corrupt(what + " has " + std::to_string(v->items.size()) + " dimensions (> 64)");
  std::vector<std::int64_t> out;
  for (const auto& item : v->items) {
    if (item->kind != PyKind::kInt)
      return heap.corrupt(what + " holds a " + describe(item.get()) + ", expected ints");
    out.push_back(item->intValue);
  }
  return out;
}

Status checkExtent(PickleHeap& heap, const TensorRef& t) {
  auto extent = extentElements(t.shape, t.strides);
  if (!extent) return heap.corrupt("tensor layout: " + extent.status().message());
  if (t.storageOffset < 0) return heap.corrupt("negative storage offset " + std::to_string(t.storageOffset));
  if (extent.value() == 0 || t.isMeta) return Status::ok();
  const auto endElems = addU64(static_cast<std::uint64_t>(t.storageOffset), extent.value());
  const auto endBytes = endElems ? mulU64(*endElems, itemSize(t.dtype)) : std::nullopt;
  const auto storageBytes = mulU64(static_cast<std::uint64_t>(t.storageNumel), itemSize(t.storageDtype));
  if (!endBytes || !storageBytes || *endBytes > *storageBytes) {
    return heap.corrupt("tensor of shape " + shapeText(t.shape) + ", strides " + shapeText(t.strides) +
                        ", offset " + std::to_string(t.storageOffset) + " reaches past the end of storage '" +
                        t.storageEntry + "' (" + std::to_string(storageBytes.value_or(0)) + " bytes)");
  }
  return Status::ok();
}

}  // namespace

StatusOr<PyValuePtr> rebuildTensor(PickleHeap& heap, const PyValue& args, int version,
                                   const std::string& fn) {
  const std::size_t minArgs = version == 1 ? 4 : version == 2 ? 6 : 7;
  if (args.items.size() < minArgs) {
    return heap.corrupt(fn + " takes " + std::to_string(minArgs) + " or more arguments, got " +
                        std::to_string(args.items.size()));
  }
  const PyValue* storage = argAt(args, 0);
  if (storage->kind != PyKind::kStorage) {
    return heap.corrupt(fn + ": argument 0 is a " + describe(storage) +
                        ", expected a storage (persistent id)");
  }
  const PyValue* offset = argAt(args, 1);
  if (offset->kind != PyKind::kInt)
    return heap.corrupt(fn + ": storage offset is a " + describe(offset) + ", expected an int");
  auto t = std::make_shared<TensorRef>();
  const StorageRef& s = *storage->storage;
  t->storageOffset = offset->intValue;
  t->dtype = s.dtype;
  t->storageKey = s.key;
  t->storageEntry = s.entry;
  t->location = s.location;
  t->storageDtype = s.dtype;
  t->storageNumel = s.numel;
  t->storageFileOffset = s.fileOffset;
  t->storageByteSize = s.byteSize;
  t->storageReadable = s.readable;
  auto shape = intList(heap, argAt(args, 2), fn + ": size");
  if (!shape) return shape.status();
  auto strides = intList(heap, argAt(args, 3), fn + ": stride");
  if (!strides) return strides.status();
  t->shape = std::move(shape.value());
  t->strides = std::move(strides.value());
  if (version >= 2) {
    auto rg = boolArg(heap, argAt(args, 4), fn + ": requires_grad");
    if (!rg) return rg.status();
    t->requiresGrad = rg.value();
  }
  if (version == 3) {
    const PyValue* dt = argAt(args, 6);
    auto dtype = dt->kind == PyKind::kDtype ? dtypeFromTorchName(dt->text) : std::nullopt;
    if (!dtype) return heap.unsupported(fn + ": dtype " + toDebugString(*dt, 1) + " is not supported");
    t->dtype = *dtype;
  }
  if (Status st = checkExtent(heap, *t); !st) return st;
  auto v = heap.node(PyKind::kTensor);
  v->tensor = std::move(t);
  return v;
}

StatusOr<PyValuePtr> rebuildMetaTensor(PickleHeap& heap, const PyValue& args, const std::string& fn) {
  if (args.items.size() < 4) return heap.corrupt(fn + " takes 4 arguments");
  const PyValue* dt = argAt(args, 0);
  auto dtype = dt->kind == PyKind::kDtype ? dtypeFromTorchName(dt->text) : std::nullopt;
  if (!dtype) return heap.unsupported(fn + ": dtype " + toDebugString(*dt, 1) + " is not supported");
  auto t = std::make_shared<TensorRef>();
  t->dtype = t->storageDtype = *dtype;
  t->isMeta = true;
  t->location = "meta";
  t->storageReadable = false;
  auto shape = intList(heap, argAt(args, 1), fn + ": size");
  if (!shape) return shape.status();
  auto strides = intList(heap, argAt(args, 2), fn + ": stride");
  if (!strides) return strides.status();
  t->shape = std::move(shape.value());
  t->strides = std::move(strides.value());
  auto rg = boolArg(heap, argAt(args, 3), fn + ": requires_grad");
  if (!rg) return rg.status();
  t->requiresGrad = rg.value();
  if (Status st = checkExtent(heap, *t); !st) return st;
  auto v = heap.node(PyKind::kTensor);
  v->tensor = std::move(t);
  return v;
}

StatusOr<PyValuePtr> asParameter(PickleHeap& heap, const PyValue* data, bool requiresGrad,
                                 const std::string& fn) {
  if (!data || data->kind != PyKind::kTensor)
    return heap.corrupt(fn + ": data is a " + describe(data) + ", expected a tensor");
  auto v = heap.node(PyKind::kTensor);
  v->tensor = std::make_shared<TensorRef>(*data->tensor);
  v->tensor->isParameter = true;
  v->tensor->requiresGrad = requiresGrad;
  return v;
}

// UTF-8 text -> bytes, as str.encode(encoding) would (latin-1: code points < 256).
StatusOr<PyValuePtr> persistentLoad(PickleHeap& heap, const PyValue& pid) {
  const bool isStorage = pid.kind == PyKind::kTuple && pid.items.size() >= 5 && pid.items[0]->isStr() &&
                         pid.items[0]->text == "storage";
  if (!isStorage) {
    return heap.unsupported("persistent id " + toDebugString(pid, 2, 6) +
                            " is not a torch storage id ('storage', type, key, location, numel)");
  }
  const PyValue& type = *pid.items[1];
  std::optional<DType> dtype;
  if (type.kind == PyKind::kDtype) {
    dtype = dtypeFromTorchName(type.text);
  } else if (type.kind == PyKind::kGlobal) {
    const auto dot = type.text.rfind('.');
    const std::string module = dot == std::string::npos ? "" : type.text.substr(0, dot);
    const std::string cls = dot == std::string::npos ? type.text : type.text.substr(dot + 1);
    if (module == "torch" || module == "torch.cuda" || module == "torch.storage") {
      dtype = cls == "UntypedStorage" || cls == "_UntypedStorage" ? std::optional(DType::kUInt8)
                                                                  : dtypeFromStorageClass(cls);
    }
  }
  if (!dtype) return heap.unsupported("storage type " + toDebugString(type, 1) + " is not supported");
  const PyValue& key = *pid.items[2];
  const PyValue& location = *pid.items[3];
  const PyValue& numel = *pid.items[4];
  if (!(key.isStr() || key.kind == PyKind::kInt) || !location.isStr() || numel.kind != PyKind::kInt ||
      numel.intValue < 0) {
    return heap.corrupt("storage id " + toDebugString(pid, 2, 6) +
                        " must be ('storage', type, str key, str location, int numel >= 0)");
  }
  const std::string keyText = key.isStr() ? key.text : std::to_string(key.intValue);
  auto record = heap.storageRecord(keyText);
  if (!record) return record.status();
  auto s = std::make_shared<StorageRef>();
  s->key = keyText;
  s->entry = record->entry;
  s->location = location.text;
  s->dtype = *dtype;
  s->numel = numel.intValue;
  s->fileOffset = record->fileOffset;
  s->byteSize = record->byteSize;
  s->readable = record->readable;
  const auto bytes = mulU64(static_cast<std::uint64_t>(s->numel), itemSize(s->dtype));
  if (record->readable && (!bytes || *bytes > record->byteSize)) {
    return heap.corrupt("storage '" + s->entry + "' holds " + std::to_string(record->byteSize) +
                        " bytes but its id says " + std::to_string(s->numel) + " " +
                        std::string(torchName(s->dtype)) + " elements");
  }
  auto v = heap.node(PyKind::kStorage);
  v->storage = std::move(s);
  return v;
}

std::string describe(const PyValue* v) {
  return v ? std::string(kindName(v->kind)) : "nothing";
}

const PyValue* argAt(const PyValue& args, std::size_t i) {
  return i < args.items.size() ? args.items[i].get() : nullptr;
}

StatusOr<bool> boolArg(PickleHeap& heap, const PyValue* v, const std::string& what) {
  if (v && v->kind == PyKind::kBool) return v->boolValue;
  if (v && v->kind == PyKind::kInt) return v->intValue != 0;
  return heap.corrupt(what + " is a " + describe(v) + ", expected a bool");
}

}  // namespace fs::tensorfile::detail
