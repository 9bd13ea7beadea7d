// The opcodes that build containers, look up globals and call reconstructors.
#include "backend/tensorfile/pickle_machine.h"
#include "backend/tensorfile/torch_rebuild.h"

namespace fs::tensorfile::detail {
namespace {

PyValuePtr sequence(PickleHeap& heap, PyKind kind, std::vector<PyValuePtr> items) {
  auto v = heap.node(kind);
  v->items = std::move(items);
  return v;
}

}  // namespace

Status Machine::appendItems(PyValue& target, std::vector<PyValuePtr> items) {
  if (target.kind == PyKind::kList) {
    target.items.insert(target.items.end(), std::make_move_iterator(items.begin()),
                        std::make_move_iterator(items.end()));
    return Status::ok();
  }
  if (target.kind == PyKind::kObject && target.object) {
    auto& dst = target.object->listItems;
    dst.insert(dst.end(), std::make_move_iterator(items.begin()), std::make_move_iterator(items.end()));
    return Status::ok();
  }
  return heap_.corrupt("cannot append to a " + std::string(kindName(target.kind)) + "; expected a list");
}

Status Machine::stepCompound(std::uint8_t op) {
  switch (op) {
    case APPEND: {
      PyValuePtr v, list;
      if (Status st = pop(v); !st) return st;
      if (Status st = top(list); !st) return st;
      return appendItems(*list, {std::move(v)});
    }
    case APPENDS: {
      std::vector<PyValuePtr> items;
      PyValuePtr list;
      if (Status st = popMark(items); !st) return st;
      if (Status st = top(list); !st) return st;
      return appendItems(*list, std::move(items));
    }
    case LIST:
    case TUPLE:
    case FROZENSET: {
      std::vector<PyValuePtr> items;
      if (Status st = popMark(items); !st) return st;
      if (op != FROZENSET)
        return push(sequence(heap_, op == LIST ? PyKind::kList : PyKind::kTuple, std::move(items)));
      auto set = heap_.node(PyKind::kFrozenSet);
      for (auto& item : items) {
        if (Status st = heap_.addItem(*set, std::move(item)); !st) return st;
      }
      return push(std::move(set));
    }
    case TUPLE1:
    case TUPLE2:
    case TUPLE3: {
      const std::size_t n = op - TUPLE1 + 1;
      if (visible() < n) return heap_.corrupt("stack underflow");
      std::vector<PyValuePtr> items(std::make_move_iterator(stack_.end() - static_cast<std::ptrdiff_t>(n)),
                                    std::make_move_iterator(stack_.end()));
      stack_.resize(stack_.size() - n);
      return push(sequence(heap_, PyKind::kTuple, std::move(items)));
    }
    case DICT:
    case SETITEMS: {
      std::vector<PyValuePtr> items;
      if (Status st = popMark(items); !st) return st;
      if (items.size() % 2 != 0) return heap_.corrupt("odd number of items for key/value pairs");
      PyValuePtr dict;
      if (op == DICT) {
        dict = heap_.node(PyKind::kDict);
      } else if (Status st = top(dict); !st) {
        return st;
      }
      for (std::size_t i = 0; i < items.size(); i += 2) {
        if (Status st = heap_.setItem(*dict, std::move(items[i]), std::move(items[i + 1])); !st) return st;
      }
      return op == DICT ? push(std::move(dict)) : Status::ok();
    }
    case SETITEM: {
      PyValuePtr value, key, dict;
      if (Status st = pop(value); !st) return st;
      if (Status st = pop(key); !st) return st;
      if (Status st = top(dict); !st) return st;
      return heap_.setItem(*dict, std::move(key), std::move(value));
    }
    case ADDITEMS: {
      std::vector<PyValuePtr> items;
      PyValuePtr set;
      if (Status st = popMark(items); !st) return st;
      if (Status st = top(set); !st) return st;
      if (set->kind == PyKind::kFrozenSet) return heap_.corrupt("cannot add items to a frozenset");
      for (auto& item : items) {
        if (Status st = heap_.addItem(*set, std::move(item)); !st) return st;
      }
      return Status::ok();
    }
    case GLOBAL:
    case INST: {
      std::string module, name;
      if (Status st = takeLine(module); !st) return st;
      if (Status st = takeLine(name); !st) return st;
      auto global = makeGlobal(heap_, module, name);
      if (!global) return global.status();
      if (op == GLOBAL) return push(std::move(global.value()));
      std::vector<PyValuePtr> items;
      if (Status st = popMark(items); !st) return st;
      auto args = sequence(heap_, PyKind::kTuple, std::move(items));
      return pushResult(callGlobal(heap_, *global.value(), *args));
    }
    case STACK_GLOBAL: {
      PyValuePtr name, module;
      if (Status st = pop(name); !st) return st;
      if (Status st = pop(module); !st) return st;
      if (!name->isStr() || !module->isStr()) return heap_.corrupt("module and name must be str");
      return pushResult(makeGlobal(heap_, module->text, name->text));
    }
    case OBJ: {
      std::vector<PyValuePtr> items;
      if (Status st = popMark(items); !st) return st;
      if (items.empty()) return heap_.corrupt("OBJ needs a class");
      PyValuePtr cls = std::move(items.front());
      items.erase(items.begin());
      auto args = sequence(heap_, PyKind::kTuple, std::move(items));
      return pushResult(callGlobal(heap_, *cls, *args));
    }
    case REDUCE: {
      PyValuePtr args, callable;
      if (Status st = pop(args); !st) return st;
      if (Status st = pop(callable); !st) return st;
      return pushResult(callGlobal(heap_, *callable, *args));
    }
    case NEWOBJ:
    case NEWOBJ_EX: {
      PyValuePtr kwargs, args, cls;
      if (op == NEWOBJ_EX) {
        if (Status st = pop(kwargs); !st) return st;
      }
      if (Status st = pop(args); !st) return st;
      if (Status st = pop(cls); !st) return st;
      return pushResult(newObject(heap_, *cls, *args, std::move(kwargs)));
    }
    case BUILD: {
      PyValuePtr state, obj;
      if (Status st = pop(state); !st) return st;
      if (Status st = top(obj); !st) return st;
      return buildObject(heap_, *obj, std::move(state));
    }
    case BINPERSID: {
      PyValuePtr pid;
      if (Status st = pop(pid); !st) return st;
      return pushResult(persistentLoad(heap_, *pid));
    }
    case PERSID: {
      std::string line;
      if (Status st = takeLine(line); !st) return st;
      auto pid = heap_.node(PyKind::kStr);
      pid->text = std::move(line);
      return pushResult(persistentLoad(heap_, *pid));
    }
    default: {
      static const char* kHex = "0123456789abcdef";
      return heap_.corrupt(std::string("unknown opcode 0x") + kHex[op >> 4] + kHex[op & 15]);
    }
  }
}

}  // namespace fs::tensorfile::detail
