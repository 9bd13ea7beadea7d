#include "backend/protocol/config/config_yaml.h"

#include <yaml-cpp/yaml.h>

#include <cstdio>
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

ConfigLoad loadConfigYaml(const std::string& text, const std::string& source) {
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

Status saveConfigFile(const RunConfig& config, const std::string& path, const DumpOptions& options) {
  return atomicWriteFile(path, dumpConfigYaml(config, options));
}

}  // namespace fs::protocol
