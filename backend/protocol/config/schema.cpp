#include "backend/protocol/config/schema.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <sstream>
#include <string_view>

#include "backend/protocol/config/text_match.h"

namespace fs::protocol {

const char* fieldTypeName(FieldType type) {
  switch (type) {
    case FieldType::kBool:
      return "boolean";
    case FieldType::kInt:
      return "integer";
    case FieldType::kFloat:
      return "number";
    case FieldType::kString:
      return "string";
    case FieldType::kEnum:
      return "choice";
    case FieldType::kStringList:
      return "list of strings";
    case FieldType::kStringMap:
      return "mapping of names to strings";
  }
  return "?";
}

void SectionSpec::applyDefaults(void* obj) const {
  for (const auto& e : entries) {
    switch (e.kind) {
      case EntrySpec::Kind::kField:
        e.set(obj, e.defaultValue);
        break;
      case EntrySpec::Kind::kSection:
        e.section->applyDefaults(e.child(obj));
        break;
      case EntrySpec::Kind::kList: {
        e.resize(obj, 0);
        e.resize(obj, e.defaultElements.size());
        for (size_t i = 0; i < e.defaultElements.size(); ++i) {
          void* elem = e.element(obj, i);
          for (const auto& [key, value] : e.defaultElements[i]) e.section->find(key)->set(elem, value);
        }
        break;
      }
    }
  }
}

const EntrySpec* SectionSpec::find(const std::string& key) const {
  for (const auto& e : entries) {
    if (e.key == key) return &e;
  }
  return nullptr;
}

std::vector<std::string> SectionSpec::keys() const {
  std::vector<std::string> out;
  for (const auto& e : entries) out.push_back(e.key);
  return out;
}

namespace {

std::vector<std::string> splitPath(const std::string& path) {
  // "a.b[2].c" -> a, b, 2, c
  std::vector<std::string> parts;
  std::string cur;
  for (char c : path) {
    if (c == '.' || c == '[' || c == ']') {
      if (!cur.empty()) parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) parts.push_back(cur);
  return parts;
}

bool parseIndex(const std::string& s, size_t* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

std::string joinPath(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

}  // namespace

StatusOr<FieldRef> resolvePath(const SectionSpec& root, void* obj, const std::string& path) {
  const auto parts = splitPath(path);
  if (parts.empty()) return Status::invalidArgument("empty config path");
  const SectionSpec* section = &root;
  std::string canonical;
  for (size_t i = 0; i < parts.size(); ++i) {
    const EntrySpec* e = section->find(parts[i]);
    if (e == nullptr) {
      return Status::invalidArgument("unknown config key '" + joinPath(canonical, parts[i]) + "'" +
                                     didYouMean(parts[i], section->keys()));
    }
    canonical = joinPath(canonical, e->key);
    const bool last = i + 1 == parts.size();
    if (e->kind == EntrySpec::Kind::kField) {
      if (!last) {
        return Status::invalidArgument("'" + canonical + "' is a " + fieldTypeName(e->type) +
                                       " field and has no sub-key '" + parts[i + 1] + "'");
      }
      return FieldRef{e, obj, section, canonical};
    }
    if (last) {
      return Status::invalidArgument("'" + canonical + "' is a section; name one of its keys: " + [&] {
        std::string s;
        for (const auto& k : e->section->keys()) s += (s.empty() ? "" : ", ") + k;
        return s;
      }());
    }
    if (e->kind == EntrySpec::Kind::kSection) {
      obj = e->child(obj);
      section = e->section;
      continue;
    }
    // List: the next part is an index or an element's name.
    const std::string& sel = parts[++i];
    const size_t n = e->size(obj);
    size_t index = n;
    if (!parseIndex(sel, &index)) {
      const EntrySpec* nameField = e->section->find("name");
      std::vector<std::string> names;
      for (size_t k = 0; k < n && nameField; ++k) {
        const Value v = nameField->get(e->elementConst(obj, k));
        names.push_back(std::get<std::string>(v));
        if (names.back() == sel) index = k;
      }
      if (index == n) {
        return Status::invalidArgument("'" + canonical + "' has no element named '" + sel + "'" +
                                       didYouMean(sel, names) + "; use an index 0.." +
                                       std::to_string(n == 0 ? 0 : n - 1) + " or a name");
      }
    } else if (index >= n) {
      return Status::invalidArgument("'" + canonical + "[" + sel + "]' is out of range: the list has " +
                                     std::to_string(n) + " element(s)");
    }
    canonical += "[" + std::to_string(index) + "]";
    if (i + 1 == parts.size()) {
      return Status::invalidArgument("'" + canonical + "' is a list element; name one of its keys");
    }
    obj = e->element(obj, index);
    section = e->section;
  }
  return Status::invalidArgument("config path '" + path + "' does not name a field");
}

bool fieldApplies(const SectionSpec& section, const EntrySpec& spec, const void* owner) {
  if (spec.appliesWhen.empty()) return true;
  const auto eq = spec.appliesWhen.find('=');
  const EntrySpec* key = section.find(spec.appliesWhen.substr(0, eq));
  if (key == nullptr || eq == std::string::npos) return true;
  return valueToText(*key, key->get(owner)) == spec.appliesWhen.substr(eq + 1);
}

namespace {
void forEachFieldImpl(const SectionSpec& s, const void* obj, const std::string& prefix,
                      const std::function<void(const std::string&, const EntrySpec&, const void*)>& fn) {
  for (const auto& e : s.entries) {
    const std::string path = joinPath(prefix, e.key);
    switch (e.kind) {
      case EntrySpec::Kind::kField:
        fn(path, e, obj);
        break;
      case EntrySpec::Kind::kSection:
        forEachFieldImpl(*e.section, e.childConst(obj), path, fn);
        break;
      case EntrySpec::Kind::kList:
        for (size_t i = 0; i < e.size(obj); ++i) {
          forEachFieldImpl(*e.section, e.elementConst(obj, i), path + "[" + std::to_string(i) + "]", fn);
        }
        break;
    }
  }
}
}  // namespace

void forEachField(const SectionSpec& root, const void* obj,
                  const std::function<void(const std::string&, const EntrySpec&, const void*)>& fn) {
  forEachFieldImpl(root, obj, "", fn);
}

namespace {

std::string formatDouble(double d) {
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, d);
  std::string s(buf, p);
  // Keep a number that reads back as a float in YAML/CLI: "1" -> "1.0".
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool parseDouble(const std::string& text, double* out) {
  std::string t = text;
  t.erase(std::remove(t.begin(), t.end(), '_'), t.end());
  if (!t.empty() && t[0] == '+') t.erase(0, 1);
  if (t.empty()) return false;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), *out);
  return ec == std::errc() && p == t.data() + t.size() && std::isfinite(*out);
}

bool isIdentifierText(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return c == '_' || std::isalnum(static_cast<unsigned char>(c)); });
}

// "text" with the escapes valueFromText reads back.
std::string quoteMapText(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      static const char* kHex = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string stringMapToText(const StringMap& map) {
  std::string out = "{";
  for (const auto& [name, value] : map) {
    if (out.size() > 1) out += ", ";
    out += (isIdentifierText(name) ? name : quoteMapText(name)) + ": " + quoteMapText(value);
  }
  return out + "}";
}

// Reads the text form of a string map (schema.h). Returns false at the first thing it cannot read.
class MapTextParser {
 public:
  explicit MapTextParser(std::string_view text) : t_(text) {}

  bool parse(StringMap* out) {
    skipBlanks();
    const bool braced = more() && t_[i_] == '{';
    if (braced) ++i_;
    while (true) {
      skipBlanks();
      if (braced && more() && t_[i_] == '}') {
        ++i_;
        skipBlanks();
        return !more();
      }
      if (!more()) return !braced;
      std::string name, value;
      if (!word(":=", &name) || name.empty()) return false;
      skipBlanks();
      if (!more() || (t_[i_] != ':' && t_[i_] != '=')) return false;
      ++i_;
      skipBlanks();
      if (!word(braced ? ",}" : ",", &value)) return false;
      if (!out->emplace(std::move(name), std::move(value)).second) return false;  // a name twice
      skipBlanks();
      if (more() && t_[i_] == ',') {
        ++i_;
      } else if (!more() || t_[i_] != '}') {
        return !more() && !braced;  // the end, or something after a quoted word
      }
    }
  }

 private:
  bool more() const { return i_ < t_.size(); }
  void skipBlanks() {
    while (more() && std::isspace(static_cast<unsigned char>(t_[i_]))) ++i_;
  }
  // A quoted word, or bare text up to one of `stops` (blanks around it dropped).
  bool word(std::string_view stops, std::string* out) {
    if (more() && t_[i_] == '"') return doubleQuoted(out);
    if (more() && t_[i_] == '\'') return singleQuoted(out);
    const std::size_t start = i_;
    while (more() && stops.find(t_[i_]) == std::string_view::npos) ++i_;
    *out = trim(std::string(t_.substr(start, i_ - start)));
    return true;
  }
  bool doubleQuoted(std::string* out) {
    for (++i_; more(); ++i_) {
      const char c = t_[i_];
      if (c == '"') {
        ++i_;
        return true;
      }
      if (c != '\\') {
        *out += c;
        continue;
      }
      if (++i_ >= t_.size()) return false;
      const char e = t_[i_];
      if (e == 'n') {
        *out += '\n';
      } else if (e == 't') {
        *out += '\t';
      } else if (e == 'x') {
        unsigned v = 0;
        if (i_ + 2 >= t_.size()) return false;
        auto [p, ec] = std::from_chars(t_.data() + i_ + 1, t_.data() + i_ + 3, v, 16);
        if (ec != std::errc() || p != t_.data() + i_ + 3) return false;
        *out += static_cast<char>(v);
        i_ += 2;
      } else {
        *out += e;  // \" and \\ (and any other character as itself)
      }
    }
    return false;  // no closing quote
  }
  bool singleQuoted(std::string* out) {
    for (++i_; more(); ++i_) {
      if (t_[i_] != '\'') {
        *out += t_[i_];
      } else if (i_ + 1 < t_.size() && t_[i_ + 1] == '\'') {
        *out += '\'';  // '' is a quote, as in YAML
        ++i_;
      } else {
        ++i_;
        return true;
      }
    }
    return false;
  }

  std::string_view t_;
  std::size_t i_ = 0;
};

}  // namespace

std::string valueToText(const EntrySpec& spec, const Value& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, bool>)
          return v ? "true" : "false";
        else if constexpr (std::is_same_v<V, int64_t>)
          return std::to_string(v);
        else if constexpr (std::is_same_v<V, double>)
          return formatDouble(v);
        else if constexpr (std::is_same_v<V, std::string>)
          return v;
        else if constexpr (std::is_same_v<V, StringMap>)
          return stringMapToText(v);
        else {
          std::string s;
          for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
          return s;
        }
      },
      value);
}

StatusOr<Value> valueFromText(const EntrySpec& spec, const std::string& rawText, const std::string& path) {
  const std::string text = trim(rawText);
  auto bad = [&](const std::string& what) {
    return Status::invalidArgument(path + ": '" + rawText + "' is not " + what);
  };
  switch (spec.type) {
    case FieldType::kBool: {
      const std::string t = lower(text);
      if (t == "true" || t == "yes" || t == "on" || t == "1") return Value(true);
      if (t == "false" || t == "no" || t == "off" || t == "0") return Value(false);
      return bad("a boolean (true or false)");
    }
    case FieldType::kInt: {
      std::string t = text;
      t.erase(std::remove(t.begin(), t.end(), '_'), t.end());
      int64_t v = 0;
      const char* b = t.data() + (!t.empty() && t[0] == '+' ? 1 : 0);
      auto [p, ec] = std::from_chars(b, t.data() + t.size(), v);
      if (!t.empty() && ec == std::errc() && p == t.data() + t.size()) return Value(v);
      // 1e8 is a common way to write an integer; accept it when exact.
      double d = 0;
      if (parseDouble(text, &d) && d == std::floor(d) && std::fabs(d) < 9.0e18) {
        return Value(static_cast<int64_t>(d));
      }
      return bad("an integer");
    }
    case FieldType::kFloat: {
      double d = 0;
      if (parseDouble(text, &d)) return Value(d);
      return bad("a finite number");
    }
    case FieldType::kString:
    case FieldType::kEnum:
      return Value(text);
    case FieldType::kStringList: {
      std::string t = text;
      if (t.size() >= 2 && t.front() == '[' && t.back() == ']') t = t.substr(1, t.size() - 2);
      std::vector<std::string> items;
      std::stringstream ss(t);
      std::string item;
      while (std::getline(ss, item, ',')) {
        item = trim(item);
        if (item.size() >= 2 && (item.front() == '"' || item.front() == '\'') &&
            item.back() == item.front()) {
          item = item.substr(1, item.size() - 2);
        }
        if (!item.empty()) items.push_back(item);
      }
      return Value(items);
    }
    case FieldType::kStringMap: {
      StringMap map;
      if (!MapTextParser(rawText).parse(&map)) {
        return bad(
            "a mapping of names to strings, e.g. {NAME: \"value\", OTHER: \"value\"} (each name once)");
      }
      return Value(std::move(map));
    }
  }
  return bad("valid");
}

std::string describeAllowed(const EntrySpec& spec) {
  switch (spec.type) {
    case FieldType::kEnum: {
      std::string s = "one of: ";
      for (size_t i = 0; i < spec.choices.size(); ++i) s += (i ? ", " : "") + spec.choices[i];
      return s;
    }
    case FieldType::kInt:
    case FieldType::kFloat: {
      std::string kind = spec.type == FieldType::kInt ? "an integer" : "a number";
      auto num = [&](double d) {
        return spec.type == FieldType::kInt ? std::to_string(static_cast<int64_t>(d)) : formatDouble(d);
      };
      if (spec.min && spec.max) return kind + " in [" + num(*spec.min) + ", " + num(*spec.max) + "]";
      if (spec.min) return kind + " >= " + num(*spec.min);
      if (spec.max) return kind + " <= " + num(*spec.max);
      return kind;
    }
    case FieldType::kBool:
      return "true or false";
    case FieldType::kString:
      return spec.required ? "a non-empty string" : "a string";
    case FieldType::kStringList:
      return "a list of strings";
    case FieldType::kStringMap:
      return "a mapping of names to strings";
  }
  return "";
}

std::string checkValue(const EntrySpec& spec, const Value& value) {
  switch (spec.type) {
    case FieldType::kEnum: {
      const auto& s = std::get<std::string>(value);
      if (std::find(spec.choices.begin(), spec.choices.end(), s) == spec.choices.end()) {
        return "'" + s + "' is not allowed; expected " + describeAllowed(spec) + didYouMean(s, spec.choices);
      }
      return "";
    }
    case FieldType::kInt:
    case FieldType::kFloat: {
      const double d = spec.type == FieldType::kInt ? static_cast<double>(std::get<int64_t>(value))
                                                    : std::get<double>(value);
      if ((spec.min && d < *spec.min) || (spec.max && d > *spec.max)) {
        return valueToText(spec, value) + " is out of range; expected " + describeAllowed(spec);
      }
      return "";
    }
    case FieldType::kString:
      if (spec.required && std::get<std::string>(value).empty()) return "must not be empty";
      return "";
    default:
      return "";
  }
}

}  // namespace fs::protocol
