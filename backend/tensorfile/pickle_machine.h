// Internal to the unpickler: the pickle virtual machine (stack, marks, memo).
// pickle_reader.cpp runs the loop and the scalar opcodes; pickle_ops.cpp the
// opcodes that build containers and call reconstructors. Not public API.
#pragma once

#include <cstdint>
#include <iterator>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/tensorfile/pickle_heap.h"

namespace fs::tensorfile::detail {

// Opcode bytes (pickletools names).
enum Op : std::uint8_t {
  MARK = '(',
  STOP = '.',
  POP = '0',
  POP_MARK = '1',
  DUP = '2',
  FLOAT = 'F',
  INT = 'I',
  BININT = 'J',
  BININT1 = 'K',
  LONG = 'L',
  BININT2 = 'M',
  NONE = 'N',
  PERSID = 'P',
  BINPERSID = 'Q',
  REDUCE = 'R',
  STRING = 'S',
  BINSTRING = 'T',
  SHORT_BINSTRING = 'U',
  UNICODE = 'V',
  BINUNICODE = 'X',
  APPEND = 'a',
  BUILD = 'b',
  GLOBAL = 'c',
  DICT = 'd',
  EMPTY_DICT = '}',
  APPENDS = 'e',
  GET = 'g',
  BINGET = 'h',
  INST = 'i',
  LONG_BINGET = 'j',
  LIST = 'l',
  EMPTY_LIST = ']',
  OBJ = 'o',
  PUT = 'p',
  BINPUT = 'q',
  LONG_BINPUT = 'r',
  SETITEM = 's',
  TUPLE = 't',
  EMPTY_TUPLE = ')',
  SETITEMS = 'u',
  BINFLOAT = 'G',
  PROTO = 0x80,
  NEWOBJ = 0x81,
  EXT1 = 0x82,
  EXT2 = 0x83,
  EXT4 = 0x84,
  TUPLE1 = 0x85,
  TUPLE2 = 0x86,
  TUPLE3 = 0x87,
  NEWTRUE = 0x88,
  NEWFALSE = 0x89,
  LONG1 = 0x8a,
  LONG4 = 0x8b,
  BINBYTES = 'B',
  SHORT_BINBYTES = 'C',
  SHORT_BINUNICODE = 0x8c,
  BINUNICODE8 = 0x8d,
  BINBYTES8 = 0x8e,
  EMPTY_SET = 0x8f,
  ADDITEMS = 0x90,
  FROZENSET = 0x91,
  NEWOBJ_EX = 0x92,
  STACK_GLOBAL = 0x93,
  MEMOIZE = 0x94,
  FRAME = 0x95,
  BYTEARRAY8 = 0x96,
  NEXT_BUFFER = 0x97,
  READONLY_BUFFER = 0x98,
};

class Machine {
 public:
  Machine(std::span<const std::byte> data, const PickleOptions& options)
      : data_(data), heap_(options, data.size()) {}

  StatusOr<PyValuePtr> run();

 private:
  Status step(std::uint8_t op);
  Status stepCompound(std::uint8_t op);
  Status appendItems(PyValue& target, std::vector<PyValuePtr> items);

  // --- input
  Status take(std::uint64_t n, std::span<const std::byte>& out);
  template <class T>
  Status takeLE(T& out);
  Status takeLine(std::string& out);
  Status takeSized(int lengthBytes, PyKind kind);
  // --- stack (Python's: items above the innermost MARK are the only ones visible)
  std::size_t visible() const { return stack_.size() - (marks_.empty() ? 0 : marks_.back()); }
  Status pop(PyValuePtr& out);
  Status popMark(std::vector<PyValuePtr>& out);
  Status top(PyValuePtr& out);
  Status push(PyValuePtr v) {
    stack_.push_back(std::move(v));
    return Status::ok();
  }
  Status pushResult(StatusOr<PyValuePtr> v) {
    if (!v) return v.status();
    return push(std::move(v.value()));
  }
  // --- memo
  Status memoPut(std::uint64_t index);
  Status memoGet(std::uint64_t index);

  std::span<const std::byte> data_;
  std::uint64_t pos_ = 0;
  PickleHeap heap_;
  std::vector<PyValuePtr> stack_;
  std::vector<std::size_t> marks_;
  // Picklers number memo entries 0, 1, 2, ...: those live in a vector; any other
  // index (legal, never written in practice) in a map, so memory stays O(entries).
  std::vector<PyValuePtr> memo_;
  std::unordered_map<std::uint64_t, PyValuePtr> sparseMemo_;
  std::size_t memoCount_ = 0;  // defined entries (MEMOIZE uses len(memo))
  PyValuePtr result_;
};

}  // namespace fs::tensorfile::detail
