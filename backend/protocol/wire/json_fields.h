// Internal: declare a record's JSON fields once, use the list to both write and read.
//
// Each record type gets one `describe(V& v, T& rec)` function listing its fields:
//
//   template <class V> void describe(V& v, CheckpointEvent& e) {
//     v.req("step", e.step);        // required: absent -> error naming the field
//     v.opt("duration_s", e.dur);   // optional: absent -> T{} (or nullopt); T{} is not written
//     v.lax("buffers", e.buffers);  // always written; absent on read -> T{}
//   }
//
// JsonWriter turns the record into a JSON object; JsonReader fills it from one and
// stops at the first problem, recording a message that names the field path
// ("units[3].param_count") and the offending value (NOTE [Error wording]). Not part
// of the public API: only the protocol's .cpp files include this header.
//
// NOTE [Error wording]
// Two wordings of the same problems, chosen per reader. kSentence (events, run.json,
// control files): "missing required field 'a.b'", "field 'a.b' is "x", expected an
// integer". kPathFirst (the plan JSON, a sharded checkpoint's index.json, whose GUI
// readers worded them so first and whose tests pin it): "a.b: missing",
// "a.b: not an integer".
//
// NOTE [Non-finite doubles]
// JSON has no NaN or infinity, yet a diverging loss is exactly what a user must see.
// Doubles that are not finite are written as the strings "nan", "inf" and "-inf";
// readers accept those strings (any case), plain numbers, and null (read as NaN, for
// writers such as Python's or nlohmann's that turn NaN into null).
//
// Thread-safety: stateless functions; a JsonReader/JsonWriter is used by one thread.
#pragma once

#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "backend/protocol/status.h"

namespace fs::protocol::json_fields {

using Json = nlohmann::json;

// A short rendering of a JSON value for error messages (at most ~60 characters).
inline std::string brief(const Json& j) {
  std::string s = j.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

// Enum codecs: a type opts in by providing, in namespace fs::protocol,
//   std::string_view toString(E) and bool parseEnum(std::string_view, E*) and
//   std::string_view enumChoices(E)  (e.g. "epoch|step|final").
template <class T>
concept ProtocolEnum = std::is_enum_v<T>;

// Records opt in by providing describe(V&, T&); detected through the writer.
class JsonWriter;
template <class T>
concept Record = requires(JsonWriter& w, T& t) {
  describe(w, t);
};

// ---- writing -----------------------------------------------------------------------

Json toJson(const std::string& v);
Json toJson(bool v);
Json toJson(double v);
template <class T>
requires std::is_integral_v<T> &&(!std::is_same_v<T, bool>)Json toJson(T v) {
  return Json(v);
}
template <ProtocolEnum E>
Json toJson(E v) {
  return Json(std::string(toString(v)));
}
template <Record R>
Json toJson(const R& r);
template <class T>
Json toJson(const std::vector<T>& v);
template <class T>
Json toJson(const std::map<std::string, T>& m);
inline Json toJson(const Json& v) {
  return v;
}

inline Json toJson(const std::string& v) {
  return Json(v);
}
inline Json toJson(bool v) {
  return Json(v);
}
inline Json toJson(double v) {
  if (std::isnan(v)) return Json("nan");
  if (std::isinf(v)) return Json(v > 0 ? "inf" : "-inf");
  return Json(v);
}
template <class T>
Json toJson(const std::vector<T>& v) {
  Json out = Json::array();
  for (const auto& e : v) out.push_back(toJson(e));
  return out;
}
template <class T>
Json toJson(const std::map<std::string, T>& m) {
  Json out = Json::object();
  for (const auto& [k, e] : m) out[k] = toJson(e);
  return out;
}

// Writes every required field and every optional field that differs from its default.
class JsonWriter {
 public:
  explicit JsonWriter(Json* out) : out_(out) {}
  template <class T>
  void req(const char* key, const T& v) {
    (*out_)[key] = toJson(v);
  }
  template <class T>
  void opt(const char* key, const T& v) {
    if (!(v == T{})) (*out_)[key] = toJson(v);
  }
  template <class T>
  void opt(const char* key, const std::optional<T>& v) {
    if (v) (*out_)[key] = toJson(*v);
  }
  template <class T>
  void lax(const char* key, const T& v) {
    req(key, v);
  }

 private:
  Json* out_;
};

template <Record R>
Json toJson(const R& r) {
  Json out = Json::object();
  JsonWriter w(&out);
  // describe() takes a mutable reference so one list serves reading too; the writer
  // only reads through it.
  describe(w, const_cast<R&>(r));
  return out;
}

// ---- reading -----------------------------------------------------------------------

// Each fromJson returns "" on success, else "expected ..." for the caller to prefix.
std::string fromJson(const Json& j, std::string& out);
std::string fromJson(const Json& j, bool& out);
std::string fromJson(const Json& j, double& out);
template <class T>
requires std::is_integral_v<T> &&(!std::is_same_v<T, bool>)std::string fromJson(const Json& j, T& out);
template <ProtocolEnum E>
std::string fromJson(const Json& j, E& out);
inline std::string fromJson(const Json& j, Json& out) {
  out = j;
  return "";
}

inline std::string kindOf(const Json& j) {
  if (j.is_null()) return "null";
  if (j.is_string()) return "a string";
  if (j.is_boolean()) return "a boolean";
  if (j.is_number()) return "a number";
  if (j.is_array()) return "an array";
  return "an object";
}

inline std::string fromJson(const Json& j, std::string& out) {
  if (!j.is_string()) return "expected a string";
  out = j.get<std::string>();
  return "";
}
inline std::string fromJson(const Json& j, bool& out) {
  if (!j.is_boolean()) return "expected true or false";
  out = j.get<bool>();
  return "";
}
inline std::string fromJson(const Json& j, double& out) {
  if (j.is_number()) {
    out = j.get<double>();
    return "";
  }
  if (j.is_null()) {  // NOTE [Non-finite doubles]
    out = std::numeric_limits<double>::quiet_NaN();
    return "";
  }
  if (j.is_string()) {
    std::string s = j.get<std::string>();
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (s == "nan")
      out = std::numeric_limits<double>::quiet_NaN();
    else if (s == "inf" || s == "infinity" || s == "+inf")
      out = std::numeric_limits<double>::infinity();
    else if (s == "-inf" || s == "-infinity")
      out = -std::numeric_limits<double>::infinity();
    else
      return "expected a number (or \"nan\", \"inf\", \"-inf\")";
    return "";
  }
  return "expected a number";
}
template <class T>
requires std::is_integral_v<T> &&(!std::is_same_v<T, bool>)std::string fromJson(const Json& j, T& out) {
  const char* expected = std::is_signed_v<T> ? "expected an integer" : "expected a non-negative integer";
  if (j.is_number_unsigned()) {
    auto u = j.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<T>::max()))
      return std::string(expected) + " in range";
    out = static_cast<T>(u);
    return "";
  }
  if (j.is_number_integer()) {
    auto i = j.get<std::int64_t>();
    if (i < 0 && !std::is_signed_v<T>) return expected;
    if (std::is_signed_v<T> && (i < static_cast<std::int64_t>(std::numeric_limits<T>::min()) ||
                                i > static_cast<std::int64_t>(std::numeric_limits<T>::max())))
      return std::string(expected) + " in range";
    out = static_cast<T>(i);
    return "";
  }
  if (j.is_number_float()) {  // 3.0 from a lenient writer; 2^53 bounds exact doubles
    double d = j.get<double>();
    if (std::trunc(d) != d || std::fabs(d) > 9007199254740992.0 || (d < 0 && !std::is_signed_v<T>))
      return expected;
    if (d < static_cast<double>(std::numeric_limits<T>::min()) ||
        d > static_cast<double>(std::numeric_limits<T>::max()))
      return std::string(expected) + " in range";
    out = static_cast<T>(d);
    return "";
  }
  return expected;
}
template <ProtocolEnum E>
std::string fromJson(const Json& j, E& out) {
  std::string expected = "expected one of " + std::string(enumChoices(E{}));
  if (!j.is_string()) return expected;
  if (!parseEnum(j.get_ref<const std::string&>(), &out)) return expected;
  return "";
}

// NOTE [Error wording]
enum class ErrorStyle { kSentence, kPathFirst };

inline std::string missingField(const std::string& path, ErrorStyle style) {
  return style == ErrorStyle::kPathFirst ? path + ": missing" : "missing required field '" + path + "'";
}
// `what` is a fromJson reason ("expected an integer").
inline std::string badField(const std::string& path, const Json& j, const std::string& what,
                            ErrorStyle style) {
  if (style == ErrorStyle::kSentence) return "field '" + path + "' is " + brief(j) + ", " + what;
  constexpr std::string_view kExpected = "expected ";
  if (what.compare(0, kExpected.size(), kExpected) == 0)
    return path + ": not " + what.substr(kExpected.size());
  return path + ": " + what;
}

class JsonReader;
// Reads any supported value at `path`; on failure sets *error (if empty) and returns false.
template <class T>
bool readValue(const Json& j, const std::string& path, T& out, std::string* error,
               ErrorStyle style = ErrorStyle::kSentence);

// Fills a record from a JSON object, remembering the first problem only.
class JsonReader {
 public:
  JsonReader(const Json& obj, std::string prefix, std::string* error,
             ErrorStyle style = ErrorStyle::kSentence)
      : obj_(obj), prefix_(std::move(prefix)), error_(error), style_(style) {}
  template <class T>
  void req(const char* key, T& out) {
    if (!error_->empty()) return;
    auto it = obj_.find(key);
    if (it == obj_.end()) {
      *error_ = missingField(prefix_ + key, style_);
      return;
    }
    readValue(*it, prefix_ + key, out, error_, style_);
  }
  template <class T>
  void opt(const char* key, T& out) {
    if (!error_->empty()) return;
    auto it = obj_.find(key);
    if (it == obj_.end() || (it->is_null() && !std::is_same_v<T, double>)) return;
    readValue(*it, prefix_ + key, out, error_, style_);
  }
  template <class T>
  void opt(const char* key, std::optional<T>& out) {
    if (!error_->empty()) return;
    auto it = obj_.find(key);
    if (it == obj_.end() || it->is_null()) return;  // null means absent for optionals
    T v{};
    if (readValue(*it, prefix_ + key, v, error_, style_)) out = std::move(v);
  }
  template <class T>
  void lax(const char* key, T& out) {
    opt(key, out);
  }

 private:
  const Json& obj_;
  std::string prefix_;
  std::string* error_;
  ErrorStyle style_;
};

template <class T>
bool readValue(const Json& j, const std::string& path, T& out, std::string* error, ErrorStyle style) {
  auto fail = [&](const std::string& what) {
    if (error->empty()) *error = badField(path, j, what, style);
    return false;
  };
  if constexpr (Record<T>) {
    if (!j.is_object()) return fail("expected an object");
    JsonReader r(j, path + ".", error, style);
    describe(r, out);
    return error->empty();
  } else if constexpr (requires { typename T::value_type; } && !std::is_same_v<T, std::string> &&
                       !std::is_same_v<T, Json>) {
    if constexpr (requires { typename T::mapped_type; }) {  // std::map<std::string, V>
      if (!j.is_object()) return fail("expected an object");
      out.clear();
      for (auto it = j.begin(); it != j.end(); ++it) {
        typename T::mapped_type v{};
        if (!readValue(it.value(), path + "." + it.key(), v, error, style)) return false;
        out.emplace(it.key(), std::move(v));
      }
      return true;
    } else {  // std::vector<V>
      if (!j.is_array()) return fail("expected an array");
      out.clear();
      out.reserve(j.size());
      for (std::size_t i = 0; i < j.size(); ++i) {
        typename T::value_type v{};
        if (!readValue(j[i], path + "[" + std::to_string(i) + "]", v, error, style)) return false;
        out.push_back(std::move(v));
      }
      return true;
    }
  } else {
    std::string why = fromJson(j, out);
    if (!why.empty()) return fail(why);
    return true;
  }
}

// Reads a whole record from a top-level object; returns "" or the first problem.
template <Record R>
std::string readRecord(const Json& obj, R& out, ErrorStyle style = ErrorStyle::kSentence) {
  std::string error;
  JsonReader r(obj, "", &error, style);
  describe(r, out);
  return error;
}

// A parser exception's message without nlohmann's "[json.exception...] " tag.
inline std::string parseProblem(const std::exception& e) {
  std::string what = e.what();
  auto close = what.find("] ");
  if (close != std::string::npos) what = what.substr(close + 2);
  return what;
}

// NOTE [JSON nesting]: nlohmann's parser is iterative but copying, dumping and
// comparing a value recurse once per level. A 64 KiB control file of '[' is 32,000
// levels: enough to overflow the stack (under ASan; a few hundred KB does it in any
// build). Deeper nesting than any valid record is refused before parsing, so no
// recursive code ever sees it (events, run.json, control files, agent events, the
// plan JSON, a sharded index).
inline constexpr int kMaxJsonNesting = 64;

// Whether no '[' / '{' outside strings is nested deeper than `limit`.
inline bool nestingWithin(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

inline std::string nestingProblem() {
  return "JSON nested deeper than " + std::to_string(kMaxJsonNesting) + " levels";
}

// Parses a whole document that must be one JSON object; errors name `src`.
inline StatusOr<Json> parseObject(std::string_view text, const std::string& src) {
  if (!nestingWithin(text, kMaxJsonNesting)) return Status::corruption(src + ": " + nestingProblem());
  Json obj;
  try {
    obj = Json::parse(text.begin(), text.end());
  } catch (const std::exception& e) {
    return Status::corruption(src + ": malformed JSON: " + parseProblem(e));
  }
  if (!obj.is_object()) return Status::corruption(src + ": expected a JSON object, found " + kindOf(obj));
  return obj;
}

// The same for the codecs whose callers name the file themselves (the plan JSON,
// index.json): "not JSON: <detail>" or "not a JSON object".
inline StatusOr<Json> parseDocument(std::string_view text) {
  if (!nestingWithin(text, kMaxJsonNesting)) return Status::corruption("not JSON: " + nestingProblem());
  Json root;
  try {
    root = Json::parse(text.begin(), text.end());
  } catch (const std::exception& e) {
    return Status::corruption("not JSON: " + parseProblem(e));
  }
  if (!root.is_object()) return Status::corruption("not a JSON object");
  return root;
}

// ---- typed lines (events.jsonl, agent-<node>.jsonl) ---------------------------------

template <class Variant, std::size_t... I>
std::vector<std::string_view> variantTypeNamesOf(std::index_sequence<I...>) {
  return {std::variant_alternative_t<I, Variant>::kType...};
}
// The `type` names of a variant's alternatives (each has a static kType), in order.
template <class Variant>
std::vector<std::string_view> variantTypeNames() {
  return variantTypeNamesOf<Variant>(std::make_index_sequence<std::variant_size_v<Variant>>());
}

// Reads the alternative of `Variant` whose kType is `type` from `obj`. Returns false
// when no alternative has that type; otherwise true, with *error "" or the first problem.
template <class Variant, std::size_t I = 0>
bool readVariant(std::string_view type, const Json& obj, Variant* out, std::string* error) {
  if constexpr (I == std::variant_size_v<Variant>) {
    return false;
  } else {
    using T = std::variant_alternative_t<I, Variant>;
    if (type != T::kType) return readVariant<Variant, I + 1>(type, obj, out, error);
    T body;
    *error = readRecord(obj, body);
    if (error->empty()) *out = std::move(body);
    return true;
  }
}

// One line: header first ({"v":..,"seq":..,"t":..,"type":..}), then the fields of
// `body` (a JSON object), then '\n'. Invalid UTF-8 in strings becomes U+FFFD.
inline std::string typedLine(std::string_view version, std::uint64_t seq, std::int64_t t,
                             std::string_view type, const Json& body) {
  std::string fields = body.dump(-1, ' ', false, Json::error_handler_t::replace);
  std::string line;
  line.reserve(fields.size() + 80);
  line += "{\"v\":\"";
  line += version;
  line += "\",\"seq\":" + std::to_string(seq);
  line += ",\"t\":" + std::to_string(t);
  line += ",\"type\":\"";
  line += type;
  line += '"';
  if (fields.size() > 2) {  // "{...}" -> ",..."
    line += ',';
    line.append(fields, 1, fields.size() - 1);
  } else {
    line += '}';
  }
  line += '\n';
  return line;
}

}  // namespace fs::protocol::json_fields
