#include "backend/protocol/config/config_yaml.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "backend/protocol/config/schema.h"
#include "backend/protocol/config/text_match.h"
#include "backend/protocol/wire/run_dir.h"

namespace fs::protocol {

namespace {

std::string at(const YAML::Node& node, const std::string& source) {
  const YAML::Mark m = node.Mark();
  if (m.is_null()) return source;
  return source + ":" + std::to_string(m.line + 1);
}

std::string joinKey(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

class Loader {
 public:
  Loader(std::string source, std::vector<Problem>* problems)
      : source_(std::move(source)), problems_(problems) {}

  void section(const SectionSpec& spec, void* obj, const YAML::Node& node, const std::string& path) {
    if (!node.IsMap()) {
      error(path, at(node, source_) + ": expected a mapping of keys for section '" +
                      (path.empty() ? "<root>" : path) + "', found " + kindName(node));
      return;
    }
    for (const auto& kv : node) {
      const std::string key = kv.first.Scalar();
      const EntrySpec* e = spec.find(key);
      const std::string p = joinKey(path, key);
      if (e == nullptr) {
        error(p, at(kv.first, source_) + ": unknown key '" + key + "'" + didYouMean(key, spec.keys()));
        continue;
      }
      switch (e->kind) {
        case EntrySpec::Kind::kField:
          field(*e, obj, kv.second, p);
          break;
        case EntrySpec::Kind::kSection:
          section(*e->section, e->child(obj), kv.second, p);
          break;
        case EntrySpec::Kind::kList:
          list(*e, obj, kv.second, p);
          break;
      }
    }
  }

 private:
  void list(const EntrySpec& e, void* obj, const YAML::Node& node, const std::string& path) {
    if (node.IsNull()) {
      e.resize(obj, 0);
      return;
    }
    if (!node.IsSequence()) {
      error(path, at(node, source_) + ": expected a list, found " + kindName(node));
      return;
    }
    e.resize(obj, 0);
    e.resize(obj, node.size());
    for (size_t i = 0; i < node.size(); ++i) {
      section(*e.section, e.element(obj, i), node[i], path + "[" + std::to_string(i) + "]");
    }
  }

  void field(const EntrySpec& e, void* obj, const YAML::Node& node, const std::string& path) {
    if (e.type == FieldType::kStringMap) {
      stringMap(e, obj, node, path);
      return;
    }
    if (e.type == FieldType::kStringList) {
      std::vector<std::string> items;
      if (node.IsSequence()) {
        for (const auto& item : node) {
          if (!item.IsScalar()) {
            error(path, at(item, source_) + ": list items must be strings, found " + kindName(item));
            return;
          }
          items.push_back(item.Scalar());
        }
      } else if (!node.IsNull()) {
        error(path, at(node, source_) + ": expected a list of strings, found " + kindName(node));
        return;
      }
      e.set(obj, Value(items));
      return;
    }
    if (node.IsNull() && (e.type == FieldType::kString)) {
      e.set(obj, Value(std::string()));
      return;
    }
    if (!node.IsScalar()) {
      error(path, at(node, source_) + ": expected " + describeAllowed(e) + ", found " + kindName(node));
      return;
    }
    auto parsed = valueFromText(e, node.Scalar(), path);
    if (!parsed) {
      error(path, at(node, source_) + ": " + parsed.status().message().substr(path.size() + 2) +
                      " (expected " + describeAllowed(e) + ")");
      return;
    }
    e.set(obj, parsed.value());
  }

  // A mapping of names to scalars; values are kept as written (`1` is "1"), nothing is "".
  void stringMap(const EntrySpec& e, void* obj, const YAML::Node& node, const std::string& path) {
    StringMap map;
    if (node.IsMap()) {
      for (const auto& kv : node) {
        if (!kv.first.IsScalar()) {
          error(path, at(kv.first, source_) + ": names must be strings, found " + kindName(kv.first));
          return;
        }
        const std::string name = kv.first.Scalar();
        if (!kv.second.IsScalar() && !kv.second.IsNull()) {
          error(joinKey(path, name),
                at(kv.second, source_) + ": expected a string value, found " + kindName(kv.second));
          return;
        }
        map[name] = kv.second.IsNull() ? std::string() : kv.second.Scalar();
      }
    } else if (!node.IsNull()) {
      error(path, at(node, source_) + ": expected a mapping of names to strings (NAME: value), found " +
                      kindName(node));
      return;
    }
    e.set(obj, Value(std::move(map)));
  }

  static std::string kindName(const YAML::Node& n) {
    if (n.IsMap()) return "a mapping";
    if (n.IsSequence()) return "a list";
    if (n.IsNull()) return "nothing";
    return "'" + n.Scalar() + "'";
  }

  void error(const std::string& path, std::string message) {
    problems_->push_back({Problem::Severity::kError, path, std::move(message), ""});
  }

  std::string source_;
  std::vector<Problem>* problems_;
};

// Rejects a newer major schema before anything else is read.
bool checkSchemaVersion(const YAML::Node& root, const std::string& source, std::vector<Problem>* problems) {
  const YAML::Node v = root["schema_version"];
  if (!v || !v.IsScalar()) return true;
  static const std::regex re(R"((\d+)\.(\d+))");
  std::smatch m;
  const std::string s = v.Scalar();
  if (!std::regex_match(s, m, re)) {
    problems->push_back({Problem::Severity::kError, "schema_version",
                         at(v, source) + ": '" + s + "' is not a MAJOR.MINOR version", ""});
    return false;
  }
  const int ourMajor = std::stoi(std::string(kConfigSchemaVersion));
  if (std::stoi(m[1]) > ourMajor) {
    problems->push_back(
        {Problem::Severity::kError, "schema_version",
         at(v, source) + ": config schema " + s + " is newer than this build reads (" +
             std::to_string(ourMajor) + ".x)",
         "update Flamingo Studio, or export the config from the newer version with an older schema"});
    return false;
  }
  return true;
}

}  // namespace

namespace {

// NOTE [Config text is UTF-8]: YAML streams are Unicode, and yaml-cpp's emitter
// writes a byte that is not UTF-8 as U+FFFD, so a config holding one would not
// load back equal to itself (found by fuzz/config_yaml_fuzzer.cpp). Such a
// document is refused, naming the line and column of the first bad byte.
// Returns the byte offset of the first invalid sequence, or npos.
std::size_t firstInvalidUtf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t n = 0;
    std::uint32_t cp = 0, min = 0;
    if ((c & 0xE0) == 0xC0) {
      n = 1, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3, cp = c & 0x07, min = 0x10000;
    } else {
      return i;
    }
    if (i + n >= s.size()) return i;  // truncated sequence
    for (std::size_t k = 1; k <= n; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (b & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += n + 1;
  }
  return std::string_view::npos;
}

ConfigLoad notUtf8(const std::string& text, const std::string& source, std::size_t at) {
  ConfigLoad out;
  out.config = defaultRunConfig();
  const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
  const auto newline = at == 0 ? std::string::npos : text.rfind('\n', at - 1);
  const auto column = at - (newline == std::string::npos ? 0 : newline + 1) + 1;
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(text[at]));
  out.problems.push_back({Problem::Severity::kError, "",
                          source + ":" + std::to_string(line) + ":" + std::to_string(column) +
                              ": not valid UTF-8 (byte " + hex + "); a config file must be UTF-8",
                          ""});
  return out;
}

ConfigLoad tooLarge(const std::string& source, std::uintmax_t bytes) {
  ConfigLoad out;
  out.config = defaultRunConfig();
  out.problems.push_back({Problem::Severity::kError, "",
                          source + ": " + std::to_string(bytes) + " bytes is over the limit of " +
                              std::to_string(kMaxConfigBytes) + " bytes for a config file",
                          ""});
  return out;
}

}  // namespace

ConfigLoad loadConfigYaml(const std::string& text, const std::string& source) {
  if (text.size() > kMaxConfigBytes) return tooLarge(source, text.size());
  if (const auto bad = firstInvalidUtf8(text); bad != std::string_view::npos)
    return notUtf8(text, source, bad);
  ConfigLoad out;
  out.config = defaultRunConfig();
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    out.problems.push_back({Problem::Severity::kError, "",
                            source + ":" + std::to_string(e.mark.line + 1) + ":" +
                                std::to_string(e.mark.column + 1) + ": not valid YAML: " + e.msg,
                            ""});
    return out;
  } catch (const std::exception& e) {
    out.problems.push_back({Problem::Severity::kError, "", source + ": not valid YAML: " + e.what(), ""});
    return out;
  }
  if (root.IsNull()) return out;  // an empty document means "all defaults"
  try {
    if (!checkSchemaVersion(root, source, &out.problems)) return out;
    Loader(source, &out.problems).section(runConfigSchema(), &out.config, root, "");
    out.config.schema_version = kConfigSchemaVersion;
  } catch (const std::exception& e) {
    out.problems.push_back({Problem::Severity::kError, "", source + ": cannot read config: " + e.what(), ""});
  }
  return out;
}

ConfigLoad loadConfigFile(const std::string& path) {
  std::error_code ec;
  const std::uintmax_t bytes = std::filesystem::file_size(path, ec);
  if (!ec && bytes > kMaxConfigBytes) return tooLarge(path, bytes);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    ConfigLoad out;
    out.config = defaultRunConfig();
    out.problems.push_back({Problem::Severity::kError, "", path + ": cannot open config file", ""});
    return out;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return loadConfigYaml(ss.str(), path);
}

namespace {

bool plainSafe(const std::string& s) {
  static const std::regex safe(R"(^[A-Za-z_/.][A-Za-z0-9_./@+-]*$)");
  static const std::regex keyword(R"(^(true|false|yes|no|on|off|null|y|n|~)$)", std::regex::icase);
  return !s.empty() && std::regex_match(s, safe) && !std::regex_match(s, keyword);
}

std::string comment(const EntrySpec& e) {
  std::string c = e.help;
  if (!e.unit.empty()) c += " [" + e.unit + "]";
  if (e.type == FieldType::kEnum) c += " (" + describeAllowed(e) + ")";
  if (!e.appliesWhen.empty()) c += " {" + e.appliesWhen + "}";
  return c;
}

void emitScalar(YAML::Emitter& out, const EntrySpec& e, const Value& v) {
  if (e.type == FieldType::kStringMap) {
    out << YAML::Flow << YAML::BeginMap;
    for (const auto& [name, value] : std::get<StringMap>(v)) {
      out << YAML::Key;
      if (plainSafe(name))
        out << name;
      else
        out << YAML::DoubleQuoted << name;
      out << YAML::Value;
      if (plainSafe(value))
        out << value;
      else
        out << YAML::DoubleQuoted << value;
    }
    out << YAML::EndMap;
    return;
  }
  if (e.type == FieldType::kStringList) {
    out << YAML::Flow << YAML::BeginSeq;
    for (const auto& s : std::get<std::vector<std::string>>(v)) {
      if (plainSafe(s))
        out << s;
      else
        out << YAML::DoubleQuoted << s;
    }
    out << YAML::EndSeq;
    return;
  }
  const std::string text = valueToText(e, v);
  if ((e.type == FieldType::kString || e.type == FieldType::kEnum) && !plainSafe(text)) {
    out << YAML::DoubleQuoted << text;
  } else {
    out << text;
  }
}

void emitSection(YAML::Emitter& out, const SectionSpec& spec, const void* obj, const DumpOptions& opt) {
  out << YAML::BeginMap;
  for (const auto& e : spec.entries) {
    out << YAML::Key << e.key << YAML::Value;
    switch (e.kind) {
      case EntrySpec::Kind::kField:
        emitScalar(out, e, e.get(obj));
        if (opt.comments) out << YAML::Comment(comment(e));
        break;
      case EntrySpec::Kind::kSection:
        emitSection(out, *e.section, e.childConst(obj), opt);
        break;
      case EntrySpec::Kind::kList:
        out << YAML::BeginSeq;
        for (size_t i = 0; i < e.size(obj); ++i) emitSection(out, *e.section, e.elementConst(obj, i), opt);
        out << YAML::EndSeq;
        break;
    }
  }
  out << YAML::EndMap;
}

}  // namespace

std::string dumpConfigYaml(const RunConfig& config, const DumpOptions& options) {
  YAML::Emitter out;
  out.SetIndent(2);
  emitSection(out, runConfigSchema(), &config, options);
  return std::string(out.c_str()) + "\n";
}

Status saveConfigFile(const RunConfig& config, const std::string& path, const DumpOptions& options,
                      unsigned mode) {
  AtomicWriteOptions write;
  write.mode = mode;
  return atomicWriteFile(path, dumpConfigYaml(config, options), write);
}

}  // namespace fs::protocol
