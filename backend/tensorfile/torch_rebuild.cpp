#include "backend/tensorfile/torch_rebuild.h"

namespace fs::tensorfile::detail {
namespace {

constexpr int kMaxCallDepth = 8;  // _rebuild_from_type_v2 wraps another call

StatusOr<PyValuePtr> makeObject(PickleHeap& heap, const std::string& name, const PyValue* args,
                                PyValuePtr kwargs) {
  auto obj = heap.node(PyKind::kObject);
  obj->text = name;
  obj->object = std::make_shared<PyObjectData>();
  if (args) {
    if (Status st = heap.charge(args->items.size()); !st) return st;
    obj->object->args = args->items;
  }
  obj->object->kwargs = std::move(kwargs);
  return obj;
}

StatusOr<std::string> encodeText(PickleHeap& heap, const std::string& text, const std::string& encoding) {
  if (Status st = heap.charge(text.size()); !st) return st;
  if (encoding == "utf-8" || encoding == "utf8" || encoding == "ascii") return text;
  if (encoding != "latin1" && encoding != "latin-1" && encoding != "iso-8859-1") {
    return heap.unsupported("_codecs.encode with encoding '" + encoding + "'");
  }
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
    } else if ((c & 0xE0) == 0xC0 && i + 1 < text.size()) {
      const unsigned cp = ((c & 0x1Fu) << 6) | (static_cast<unsigned char>(text[i + 1]) & 0x3Fu);
      if (cp > 0xFF)
        return heap.corrupt("_codecs.encode: character U+" + std::to_string(cp) + " is not latin-1");
      out += static_cast<char>(cp);
      i += 2;
    } else {
      return heap.corrupt("_codecs.encode: text is not latin-1 (byte " + std::to_string(i) + ")");
    }
  }
  return out;
}

// The items of an iterable argument (list, tuple, set, frozenset); empty when absent.
StatusOr<const std::vector<PyValuePtr>*> iterableItems(PickleHeap& heap, const PyValue* v,
                                                       const std::string& fn) {
  static const std::vector<PyValuePtr> kEmpty;
  if (!v) return &kEmpty;
  if (v->isSequence() || v->kind == PyKind::kSet || v->kind == PyKind::kFrozenSet) {
    if (Status st = heap.charge(v->items.size()); !st) return st;
    return &v->items;
  }
  return heap.unsupported(fn + " of a " + describe(v));
}

StatusOr<PyValuePtr> callImpl(PickleHeap& heap, const PyValue& callable, const PyValue& args, int depth);

StatusOr<PyValuePtr> callKnown(PickleHeap& heap, const std::string& fn, const PyValue& args, int depth) {
  const PyValue* a0 = argAt(args, 0);
  if (fn == "torch._utils._rebuild_tensor_v2") return rebuildTensor(heap, args, 2, fn);
  if (fn == "torch._utils._rebuild_tensor") return rebuildTensor(heap, args, 1, fn);
  if (fn == "torch._utils._rebuild_tensor_v3") return rebuildTensor(heap, args, 3, fn);
  if (fn == "torch._utils._rebuild_meta_tensor_no_storage") return rebuildMetaTensor(heap, args, fn);
  if (fn == "torch._utils._rebuild_parameter" || fn == "torch._utils._rebuild_parameter_with_state") {
    auto rg = boolArg(heap, argAt(args, 1), fn + ": requires_grad");
    if (!rg) return rg.status();
    return asParameter(heap, a0, rg.value(), fn);
  }
  if (fn == "torch._tensor._rebuild_from_type_v2") {
    const PyValue* inner = argAt(args, 2);
    if (!a0 || !inner || inner->kind != PyKind::kTuple)
      return heap.corrupt(fn + " takes (func, type, args, state)");
    auto value = callImpl(heap, *a0, *inner, depth + 1);
    const PyValue* type = argAt(args, 1);
    if (value && value.value()->isTensor() && type && type->text == "torch.nn.parameter.Parameter") {
      return asParameter(heap, value.value().get(), value.value()->tensor->requiresGrad, fn);
    }
    return value;
  }
  // LibTorch's pickle_save (other LibTorch programs; our checkpoints before NOTE [Untagged
  // pickles]) tags typed containers:
  // restore_type_tag(value, "Dict[str, Any]") and build_*list(list) return
  // their first argument unchanged, as Python's torch.load does.
  if (fn == "torch.jit._pickle.restore_type_tag" || fn.rfind("torch.jit._pickle.build_", 0) == 0) {
    if (!args.isSequence() || args.items.empty()) return heap.corrupt(fn + " takes (value, ...)");
    return args.items[0];
  }
  if (fn == "collections.OrderedDict" || fn == "builtins.dict") {
    auto d = heap.node(PyKind::kDict);
    d->ordered = fn == "collections.OrderedDict";
    if (a0 && a0->isDict()) {
      for (const auto& [k, v] : a0->entries) {
        if (Status st = heap.setItem(*d, k, v); !st) return st;
      }
      return d;
    }
    auto items = iterableItems(heap, a0, fn);
    if (!items) return items.status();
    for (const auto& pair : *items.value()) {
      if (!pair->isSequence() || pair->items.size() != 2)
        return heap.corrupt(fn + ": items must be (key, value) pairs");
      if (Status st = heap.setItem(*d, pair->items[0], pair->items[1]); !st) return st;
    }
    return d;
  }
  if (fn == "builtins.set" || fn == "builtins.frozenset") {
    auto s = heap.node(fn == "builtins.set" ? PyKind::kSet : PyKind::kFrozenSet);
    auto items = iterableItems(heap, a0, fn);
    if (!items) return items.status();
    for (const auto& item : *items.value()) {
      if (Status st = heap.addItem(*s, item); !st) return st;
    }
    return s;
  }
  if (fn == "builtins.list" || fn == "builtins.tuple" || fn == "torch.Size") {
    auto items = iterableItems(heap, a0, fn);
    if (!items) return items.status();
    auto s = heap.node(fn == "builtins.list" ? PyKind::kList : PyKind::kTuple);
    s->items = *items.value();
    return s;
  }
  if (fn == "_codecs.encode" || fn == "builtins.bytes" || fn == "builtins.bytearray") {
    auto b = heap.node(PyKind::kBytes);
    if (!a0) return b;
    if (a0->kind == PyKind::kBytes) {
      b->text = a0->text;
    } else if (a0->kind == PyKind::kStr) {
      const PyValue* enc = argAt(args, 1);
      auto bytes = encodeText(heap, a0->text, enc && enc->isStr() ? enc->text : "utf-8");
      if (!bytes) return bytes.status();
      b->text = std::move(bytes.value());
    } else {
      auto items = iterableItems(heap, a0, fn);
      if (!items) return items.status();
      for (const auto& item : *items.value()) {
        if (item->kind != PyKind::kInt || item->intValue < 0 || item->intValue > 255) {
          return heap.corrupt(fn + ": byte values must be ints in [0, 255]");
        }
        b->text += static_cast<char>(item->intValue);
      }
    }
    if (Status st = heap.charge(b->text.size()); !st) return st;
    return b;
  }
  if (fn == "torch.device") {
    if (!a0 || !a0->isStr())
      return heap.corrupt("torch.device takes a device type string, got " + describe(a0));
    auto d = heap.node(PyKind::kDevice);
    d->text = a0->text;
    if (const PyValue* index = argAt(args, 1); index && index->kind == PyKind::kInt) {
      d->text += ":" + std::to_string(index->intValue);
    }
    return d;
  }
  if (fn == "torch.serialization._get_layout" && a0 && a0->isStr()) {
    auto g = heap.node(PyKind::kGlobal);
    g->text = a0->text;  // "torch.strided"
    return g;
  }
  if (fn == "copyreg._reconstructor" && a0 && a0->kind == PyKind::kGlobal) {
    return makeObject(heap, a0->text, nullptr, nullptr);  // object.__new__(cls); state follows in BUILD
  }
  return makeObject(heap, fn, &args, nullptr);
}

StatusOr<PyValuePtr> callImpl(PickleHeap& heap, const PyValue& callable, const PyValue& args, int depth) {
  if (depth > kMaxCallDepth)
    return heap.corrupt("reconstructor calls nest deeper than " + std::to_string(kMaxCallDepth));
  if (callable.kind != PyKind::kGlobal) {
    return heap.corrupt("cannot call a " + describe(&callable) + "; expected a class or function (GLOBAL)");
  }
  if (args.kind != PyKind::kTuple)
    return heap.corrupt("arguments of " + callable.text + " are a " + describe(&args) + ", expected a tuple");
  if (Status st = heap.charge(1); !st) return st;
  return callKnown(heap, callable.text, args, depth);
}

}  // namespace

StatusOr<PyValuePtr> makeGlobal(PickleHeap& heap, std::string module, const std::string& name) {
  if (module == "__builtin__") module = "builtins";
  if (module == "copy_reg") module = "copyreg";
  if (module.size() + name.size() > 1024) return heap.corrupt("global name longer than 1024 bytes");
  if (module == "torch") {
    if (auto dtype = dtypeFromTorchName(name)) {
      auto d = heap.node(PyKind::kDtype);
      d->text = std::string(torchName(*dtype));
      return d;
    }
  }
  auto g = heap.node(PyKind::kGlobal);
  g->text = module + "." + name;
  return g;
}

StatusOr<PyValuePtr> callGlobal(PickleHeap& heap, const PyValue& callable, const PyValue& args) {
  return callImpl(heap, callable, args, 0);
}

StatusOr<PyValuePtr> newObject(PickleHeap& heap, const PyValue& cls, const PyValue& args, PyValuePtr kwargs) {
  if (cls.kind != PyKind::kGlobal)
    return heap.corrupt("cannot instantiate a " + describe(&cls) + "; expected a class");
  if (args.kind != PyKind::kTuple)
    return heap.corrupt("arguments of " + cls.text + " are a " + describe(&args) + ", expected a tuple");
  const std::string& c = cls.text;
  if (c == "collections.OrderedDict" || c == "builtins.dict") {
    auto d = heap.node(PyKind::kDict);
    d->ordered = c == "collections.OrderedDict";
    return d;
  }
  if (c == "builtins.set" || c == "builtins.list")
    return heap.node(c == "builtins.set" ? PyKind::kSet : PyKind::kList);
  if (c == "builtins.frozenset" || c == "builtins.tuple" || c == "torch.Size")
    return callGlobal(heap, cls, args);
  return makeObject(heap, c, &args, std::move(kwargs));
}

Status buildObject(PickleHeap& heap, PyValue& obj, PyValuePtr state) {
  switch (obj.kind) {
    case PyKind::kObject:
    case PyKind::kDict:  // OrderedDict attributes, e.g. a state dict's _metadata
      obj.state = std::move(state);
      return Status::ok();
    case PyKind::kTensor:
      return Status::ok();  // Python attributes on a tensor: not modelled
    default:
      return heap.corrupt("cannot set the state of a " + std::string(kindName(obj.kind)));
  }
}

}  // namespace fs::tensorfile::detail
