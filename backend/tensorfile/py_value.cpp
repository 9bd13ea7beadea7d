#include "backend/tensorfile/py_value.h"

#include <charconv>
#include <cmath>

namespace fs::tensorfile {
namespace {

std::string formatDouble(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string quote(std::string_view s, char q, std::size_t maxLen) {
  std::string out(1, q);
  for (std::size_t i = 0; i < s.size() && i < maxLen; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == static_cast<unsigned char>(q) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7F) {
      static const char* kHex = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > maxLen) out += "...";
  out += q;
  return out;
}

std::string bytesRepr(std::string_view s, std::size_t maxLen) {
  static const char* kHex = "0123456789abcdef";
  std::string out = "b'";
  for (std::size_t i = 0; i < s.size() && i < maxLen; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7F && c != '\'' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (s.size() > maxLen) out += "...";
  return out + "'";
}

std::string shapeString(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void render(const PyValue& v, int depth, int maxDepth, std::size_t maxItems, std::string& out);

void renderSeq(const std::vector<PyValuePtr>& items, const char* open, const char* close, int depth,
               int maxDepth, std::size_t maxItems, std::string& out) {
  out += open;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i == maxItems) {
      out += ", ...(" + std::to_string(items.size()) + " items)";
      break;
    }
    if (i) out += ", ";
    render(*items[i], depth + 1, maxDepth, maxItems, out);
  }
  out += close;
}

void render(const PyValue& v, int depth, int maxDepth, std::size_t maxItems, std::string& out) {
  const bool container = !v.items.empty() || !v.entries.empty() || v.kind == PyKind::kObject;
  if (depth > maxDepth && container) {
    out += "...";
    return;
  }
  switch (v.kind) {
    case PyKind::kNone:
      out += "None";
      return;
    case PyKind::kBool:
      out += v.boolValue ? "True" : "False";
      return;
    case PyKind::kInt:
      out += std::to_string(v.intValue);
      return;
    case PyKind::kBigInt:
      out += v.text;
      return;
    case PyKind::kFloat:
      out += formatDouble(v.floatValue);
      return;
    case PyKind::kStr:
      out += quote(v.text, '\'', 200);
      return;
    case PyKind::kBytes:
      out += bytesRepr(v.text, 64);
      return;
    case PyKind::kList:
      renderSeq(v.items, "[", "]", depth, maxDepth, maxItems, out);
      return;
    case PyKind::kTuple:
      renderSeq(v.items, "(", v.items.size() == 1 ? ",)" : ")", depth, maxDepth, maxItems, out);
      return;
    case PyKind::kSet:
      renderSeq(v.items, "{", "}", depth, maxDepth, maxItems, out);
      return;
    case PyKind::kFrozenSet:
      renderSeq(v.items, "frozenset({", "})", depth, maxDepth, maxItems, out);
      return;
    case PyKind::kDict: {
      out += v.ordered ? "OrderedDict({" : "{";
      for (std::size_t i = 0; i < v.entries.size(); ++i) {
        if (i == maxItems) {
          out += ", ...(" + std::to_string(v.entries.size()) + " items)";
          break;
        }
        if (i) out += ", ";
        render(*v.entries[i].first, depth + 1, maxDepth, maxItems, out);
        out += ": ";
        render(*v.entries[i].second, depth + 1, maxDepth, maxItems, out);
      }
      out += v.ordered ? "})" : "}";
      return;
    }
    case PyKind::kGlobal:
      out += "<" + v.text + ">";
      return;
    case PyKind::kObject:
      out += v.text;
      renderSeq(v.object ? v.object->args : std::vector<PyValuePtr>{}, "(", ")", depth, maxDepth, maxItems,
                out);
      return;
    case PyKind::kTensor: {
      const TensorRef& t = *v.tensor;
      out += t.isParameter ? "Parameter(" : "tensor(";
      out += std::string(torchName(t.dtype)) + ", " + shapeString(t.shape);
      if (!t.isContiguous()) out += ", stride=" + shapeString(t.strides);
      if (t.isMeta) out += ", device='meta'";
      if (t.requiresGrad) out += ", requires_grad=True";
      out += ")";
      return;
    }
    case PyKind::kStorage:
      out += "storage(" + std::string(torchName(v.storage->dtype)) + ", " + std::to_string(v.storage->numel) +
             ")";
      return;
    case PyKind::kDevice:
      out += "device('" + v.text + "')";
      return;
    case PyKind::kDtype:
      out += v.text;
      return;
  }
}

}  // namespace

std::string_view kindName(PyKind kind) {
  switch (kind) {
    case PyKind::kNone:
      return "None";
    case PyKind::kBool:
      return "bool";
    case PyKind::kInt:
      return "int";
    case PyKind::kBigInt:
      return "int";
    case PyKind::kFloat:
      return "float";
    case PyKind::kStr:
      return "str";
    case PyKind::kBytes:
      return "bytes";
    case PyKind::kList:
      return "list";
    case PyKind::kTuple:
      return "tuple";
    case PyKind::kDict:
      return "dict";
    case PyKind::kSet:
      return "set";
    case PyKind::kFrozenSet:
      return "frozenset";
    case PyKind::kGlobal:
      return "global";
    case PyKind::kObject:
      return "object";
    case PyKind::kTensor:
      return "torch.Tensor";
    case PyKind::kStorage:
      return "torch.storage";
    case PyKind::kDevice:
      return "torch.device";
    case PyKind::kDtype:
      return "torch.dtype";
  }
  return "?";
}

PyValuePtr PyValue::make(PyKind kind) {
  auto v = std::make_shared<PyValue>();
  v->kind = kind;
  return v;
}

PyValuePtr PyValue::makeInt(std::int64_t value) {
  auto v = make(PyKind::kInt);
  v->intValue = value;
  return v;
}

PyValuePtr PyValue::makeStr(std::string s, PyKind kind) {
  auto v = make(kind);
  v->text = std::move(s);
  return v;
}

std::optional<std::int64_t> PyValue::asInt() const {
  if (kind == PyKind::kInt) return intValue;
  if (kind == PyKind::kBool) return boolValue ? 1 : 0;
  return std::nullopt;
}

std::optional<double> PyValue::asDouble() const {
  if (kind == PyKind::kFloat) return floatValue;
  if (auto i = asInt()) return static_cast<double>(*i);
  return std::nullopt;
}

const PyValue* PyValue::find(std::string_view key) const {
  if (kind != PyKind::kDict) return nullptr;
  for (const auto& [k, v] : entries) {
    if (k->kind == PyKind::kStr && k->text == key) return v.get();
  }
  return nullptr;
}

std::string PyValue::typeName() const {
  if (kind == PyKind::kDict && ordered) return "collections.OrderedDict";
  if (kind == PyKind::kObject) return text;
  if (kind == PyKind::kTensor && tensor && tensor->isParameter) return "torch.nn.Parameter";
  return std::string(kindName(kind));
}

std::string toDebugString(const PyValue& value, int maxDepth, std::size_t maxItems) {
  std::string out;
  render(value, 0, maxDepth, maxItems, out);
  return out;
}

std::string keyToString(const PyValue& key) {
  if (key.kind == PyKind::kStr) return key.text;
  if (key.kind == PyKind::kInt) return std::to_string(key.intValue);
  return toDebugString(key, 2, 4);
}

}  // namespace fs::tensorfile
