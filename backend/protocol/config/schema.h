// Reflection over the run config: the one declaration every consumer reads.
//
// A SectionSpec describes one config struct as an ordered list of entries:
// scalar fields (bool, int, float, string, enum, string list, string map), nested
// sections and lists of sections. Entries carry key, default, unit, help and
// allowed values, plus type-erased accessors bound to the struct member, so
// generic code (YAML, overrides, validation, the GUI form) never names a
// member. runConfigSchema() is built once and is immutable afterwards.
//
// Thread-safety: the schema is immutable after first use (safe to share);
// accessors touch only the object passed in.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "backend/protocol/status.h"

namespace fs::protocol {

// NAME -> value, in name order (launch.env).
using StringMap = std::map<std::string, std::string>;
using Value = std::variant<bool, int64_t, double, std::string, std::vector<std::string>, StringMap>;

enum class FieldType { kBool, kInt, kFloat, kString, kEnum, kStringList, kStringMap };
const char* fieldTypeName(FieldType type);

struct SectionSpec;

struct EntrySpec {
  enum class Kind { kField, kSection, kList };
  Kind kind = Kind::kField;
  std::string key;
  std::string help;

  // kField
  FieldType type = FieldType::kString;
  Value defaultValue;
  std::string unit;
  std::optional<double> min;  // inclusive
  std::optional<double> max;  // inclusive
  std::vector<std::string> choices;
  bool required = false;  // a string that must not be empty (when it applies)
  // "key=value": the field only means something when sibling `key` has that
  // value (e.g. mmc4-only dataset fields). Dumped always; the GUI hides it.
  std::string appliesWhen;
  std::function<Value(const void*)> get;
  std::function<void(void*, const Value&)> set;

  // kSection / kList
  const SectionSpec* section = nullptr;
  std::function<void*(void*)> child;  // kSection
  std::function<const void*(const void*)> childConst;
  std::function<size_t(const void*)> size;  // kList
  std::function<void*(void*, size_t)> element;
  std::function<const void*(const void*, size_t)> elementConst;
  std::function<void(void*, size_t)> resize;  // new elements get element defaults
  // Default elements of a list as (key -> value) overrides of element defaults.
  std::vector<std::vector<std::pair<std::string, Value>>> defaultElements;
};

struct SectionSpec {
  std::string key;   // empty for the root
  std::string help;  // shown as the group title's tooltip
  std::vector<EntrySpec> entries;
  // Applies every field default of this section (recursively) to `obj`.
  void applyDefaults(void* obj) const;
  const EntrySpec* find(const std::string& key) const;
  std::vector<std::string> keys() const;
};

const SectionSpec& runConfigSchema();

// A field reached by walking a path: its spec and the object that holds it.
struct FieldRef {
  const EntrySpec* spec = nullptr;
  void* owner = nullptr;
  const SectionSpec* section = nullptr;  // the section that declares `spec`
  std::string path;                      // canonical, e.g. data.datasets[1].batch_size
};

// Whether a field means something for `owner`: true unless its appliesWhen
// condition ("key=value", key a field of the same section) does not hold.
bool fieldApplies(const SectionSpec& section, const EntrySpec& spec, const void* owner);

// Resolve "a.b.c", "data.datasets[1].batch_size", "data.datasets.1.batch_size"
// or "data.datasets.mmc4.batch_size" (list elements by their `name`).
// Errors name the first unknown component and suggest the closest key.
StatusOr<FieldRef> resolvePath(const SectionSpec& root, void* obj, const std::string& path);

// Every scalar field with its canonical path, in declaration order.
void forEachField(
    const SectionSpec& root, const void* obj,
    const std::function<void(const std::string& path, const EntrySpec&, const void* owner)>& fn);

// Text forms shared by YAML, --set and the command line. A string map reads
// {NAME: "value", OTHER: "value"}: every value in double quotes with '\"', '\\',
// '\n', '\t' and '\xHH' escapes (a name too when it is not an identifier);
// valueFromText also takes single-quoted and bare values, '=' for ':', and no braces.
std::string valueToText(const EntrySpec& spec, const Value& value);
// Parses `text` as the field's type; the error names `path`, the text and the type.
StatusOr<Value> valueFromText(const EntrySpec& spec, const std::string& text, const std::string& path);
// Checks range / choices / required; empty string when the value is allowed.
std::string checkValue(const EntrySpec& spec, const Value& value);
// "one of: a, b, c" / "an integer in [1, 64]" / ... for messages.
std::string describeAllowed(const EntrySpec& spec);

}  // namespace fs::protocol
