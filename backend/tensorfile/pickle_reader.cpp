#include "backend/tensorfile/pickle_reader.h"

#include <bit>
#include <charconv>
#include <cstring>
#include <iterator>

#include "backend/tensorfile/byte_io.h"
#include "backend/tensorfile/pickle_machine.h"
#include "backend/tensorfile/pickle_text.h"

namespace fs::tensorfile {
namespace detail {

Status Machine::take(std::uint64_t n, std::span<const std::byte>& out) {
  if (!detail::inBounds(pos_, n, data_.size())) {
    return heap_.corrupt("needs " + std::to_string(n) + " bytes but only " +
                         std::to_string(data_.size() - pos_) + " remain (truncated pickle?)");
  }
  out = data_.subspan(pos_, n);
  pos_ += n;
  return Status::ok();
}

template <class T>
Status Machine::takeLE(T& out) {
  std::span<const std::byte> b;
  if (Status st = take(sizeof(T), b); !st) return st;
  out = *detail::readLE<T>(b, 0);
  return Status::ok();
}

Status Machine::takeLine(std::string& out) {
  const auto* begin = reinterpret_cast<const char*>(data_.data()) + pos_;
  const auto* nl = static_cast<const char*>(std::memchr(begin, '\n', data_.size() - pos_));
  if (!nl) return heap_.corrupt("text argument has no terminating newline (truncated pickle?)");
  out.assign(begin, nl);
  pos_ += static_cast<std::uint64_t>(nl - begin) + 1;
  return Status::ok();
}

// str / bytes whose length precedes them in 1, 4 or 8 little-endian bytes.
Status Machine::takeSized(int lengthBytes, PyKind kind) {
  std::uint64_t n = 0;
  Status st;
  if (lengthBytes == 1) {
    std::uint8_t v = 0;
    st = takeLE(v);
    n = v;
  } else if (lengthBytes == 4) {
    std::uint32_t v = 0;
    st = takeLE(v);
    n = v;
  } else {
    st = takeLE(n);
  }
  if (!st) return st;
  std::span<const std::byte> b;
  if (Status s = take(n, b); !s) return s;
  auto v = heap_.node(kind);
  v->text = detail::asString(b);
  return push(std::move(v));
}

Status Machine::pop(PyValuePtr& out) {
  if (visible() == 0) return heap_.corrupt("stack underflow");
  out = std::move(stack_.back());
  stack_.pop_back();
  return Status::ok();
}

Status Machine::top(PyValuePtr& out) {
  if (visible() == 0) return heap_.corrupt("stack underflow");
  out = stack_.back();
  return Status::ok();
}

Status Machine::popMark(std::vector<PyValuePtr>& out) {
  if (marks_.empty()) return heap_.corrupt("no MARK to pop to");
  const std::size_t m = marks_.back();
  marks_.pop_back();
  out.assign(std::make_move_iterator(stack_.begin() + static_cast<std::ptrdiff_t>(m)),
             std::make_move_iterator(stack_.end()));
  stack_.resize(m);
  return heap_.charge(out.size());
}

Status Machine::memoPut(std::uint64_t index) {
  PyValuePtr v;
  if (Status st = top(v); !st) return st;
  if (index < memo_.size()) {
    if (!memo_[index]) ++memoCount_;
    memo_[index] = std::move(v);
  } else if (index == memo_.size() && sparseMemo_.empty()) {
    memo_.push_back(std::move(v));
    ++memoCount_;
  } else {
    if (sparseMemo_.insert_or_assign(index, std::move(v)).second) ++memoCount_;
  }
  return Status::ok();
}

Status Machine::memoGet(std::uint64_t index) {
  if (index < memo_.size() && memo_[index]) return push(memo_[index]);
  if (auto it = sparseMemo_.find(index); it != sparseMemo_.end()) return push(it->second);
  return heap_.corrupt("memo index " + std::to_string(index) + " was never stored");
}

StatusOr<PyValuePtr> Machine::run() {
  while (!result_) {
    std::span<const std::byte> b;
    heap_.at(pos_, "opcode");
    if (Status st = take(1, b); !st)
      return heap_.corrupt("no STOP opcode before the end of the data (truncated pickle?)");
    const auto op = std::to_integer<std::uint8_t>(b[0]);
    heap_.at(pos_ - 1, detail::opcodeName(op));
    if (Status st = heap_.charge(1); !st) return st;
    if (Status st = step(op); !st) return st;
  }
  if (Status st = heap_.finish(result_); !st) return st;
  return result_;
}

Status Machine::step(std::uint8_t op) {
  switch (op) {
    case PROTO: {
      std::uint8_t v = 0;
      if (Status st = takeLE(v); !st) return st;
      if (v > 5) return heap_.unsupported("pickle protocol " + std::to_string(v) + " (supported: 0 to 5)");
      return Status::ok();
    }
    case FRAME: {
      std::uint64_t n = 0;
      if (Status st = takeLE(n); !st) return st;
      if (!detail::inBounds(pos_, n, data_.size()))
        return heap_.corrupt("frame of " + std::to_string(n) + " bytes runs past the end");
      return Status::ok();
    }
    case STOP:
      return pop(result_);
    case MARK:
      marks_.push_back(stack_.size());
      return Status::ok();
    case POP: {
      if (visible() == 0 && !marks_.empty()) {
        std::vector<PyValuePtr> discard;
        return popMark(discard);
      }
      PyValuePtr v;
      return pop(v);
    }
    case POP_MARK: {
      std::vector<PyValuePtr> discard;
      return popMark(discard);
    }
    case DUP: {
      PyValuePtr v;
      if (Status st = top(v); !st) return st;
      return push(std::move(v));
    }
    case NONE:
      return push(heap_.none());
    case NEWTRUE:
      return push(heap_.boolean(true));
    case NEWFALSE:
      return push(heap_.boolean(false));
    case BININT: {
      std::uint32_t v = 0;
      if (Status st = takeLE(v); !st) return st;
      return push(detail::intNode(heap_, static_cast<std::int32_t>(v)));
    }
    case BININT1: {
      std::uint8_t v = 0;
      if (Status st = takeLE(v); !st) return st;
      return push(detail::intNode(heap_, v));
    }
    case BININT2: {
      std::uint16_t v = 0;
      if (Status st = takeLE(v); !st) return st;
      return push(detail::intNode(heap_, v));
    }
    case LONG1:
    case LONG4: {
      std::uint64_t n = 0;
      if (op == LONG1) {
        std::uint8_t v = 0;
        if (Status st = takeLE(v); !st) return st;
        n = v;
      } else {
        std::uint32_t v = 0;
        if (Status st = takeLE(v); !st) return st;
        if (static_cast<std::int32_t>(v) < 0) return heap_.corrupt("negative LONG4 length");
        n = v;
      }
      std::span<const std::byte> b;
      if (Status st = take(n, b); !st) return st;
      return pushResult(detail::longFromBytes(heap_, b));
    }
    case INT:
    case LONG: {
      std::string line;
      if (Status st = takeLine(line); !st) return st;
      return pushResult(detail::intFromText(heap_, line, op == INT));
    }
    case FLOAT: {
      std::string line;
      if (Status st = takeLine(line); !st) return st;
      return pushResult(detail::floatFromText(heap_, line));
    }
    case BINFLOAT: {
      std::span<const std::byte> b;
      if (Status st = take(8, b); !st) return st;
      std::uint64_t bits = 0;
      for (std::byte x : b) bits = (bits << 8) | std::to_integer<std::uint64_t>(x);  // big-endian
      auto v = heap_.node(PyKind::kFloat);
      v->floatValue = std::bit_cast<double>(bits);
      return push(std::move(v));
    }
    case STRING:
    case UNICODE: {
      std::string line;
      if (Status st = takeLine(line); !st) return st;
      return pushResult(op == STRING ? detail::strFromRepr(heap_, line)
                                     : detail::strFromRawUnicodeEscape(heap_, line));
    }
    case BINSTRING: {
      if (!detail::inBounds(pos_, 4, data_.size())) return heap_.corrupt("truncated length");
      const auto n = *detail::readLE<std::uint32_t>(data_, pos_);
      if (static_cast<std::int32_t>(n) < 0) return heap_.corrupt("negative BINSTRING length");
      return takeSized(4, PyKind::kStr);
    }
    case SHORT_BINSTRING:
      return takeSized(1, PyKind::kStr);
    case BINUNICODE:
      return takeSized(4, PyKind::kStr);
    case SHORT_BINUNICODE:
      return takeSized(1, PyKind::kStr);
    case BINUNICODE8:
      return takeSized(8, PyKind::kStr);
    case BINBYTES:
      return takeSized(4, PyKind::kBytes);
    case SHORT_BINBYTES:
      return takeSized(1, PyKind::kBytes);
    case BINBYTES8:
    case BYTEARRAY8:
      return takeSized(8, PyKind::kBytes);
    case EMPTY_LIST:
      return push(heap_.node(PyKind::kList));
    case EMPTY_TUPLE:
      return push(heap_.node(PyKind::kTuple));
    case EMPTY_DICT:
      return push(heap_.node(PyKind::kDict));
    case EMPTY_SET:
      return push(heap_.node(PyKind::kSet));
    case GET:
    case PUT: {
      std::string line;
      if (Status st = takeLine(line); !st) return st;
      std::uint64_t index = 0;
      auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), index);
      if (ec != std::errc() || p != line.data() + line.size())
        return heap_.corrupt("bad memo index '" + line + "'");
      return op == GET ? memoGet(index) : memoPut(index);
    }
    case BINGET:
    case BINPUT: {
      std::uint8_t v = 0;
      if (Status st = takeLE(v); !st) return st;
      return op == BINGET ? memoGet(v) : memoPut(v);
    }
    case LONG_BINGET:
    case LONG_BINPUT: {
      std::uint32_t v = 0;
      if (Status st = takeLE(v); !st) return st;
      return op == LONG_BINGET ? memoGet(v) : memoPut(v);
    }
    case MEMOIZE:
      return memoPut(memoCount_);
    case EXT1:
    case EXT2:
    case EXT4:
      return heap_.unsupported("the copyreg extension registry is not supported");
    case NEXT_BUFFER:
    case READONLY_BUFFER:
      return heap_.unsupported("out-of-band buffers (pickle protocol 5) are not supported");
    default:
      return stepCompound(op);
  }
}

}  // namespace detail

StatusOr<PyValuePtr> unpickle(std::span<const std::byte> data, const PickleOptions& options) {
  detail::Machine machine(data, options);
  return machine.run();
}

}  // namespace fs::tensorfile
