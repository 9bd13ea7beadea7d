#include "backend/protocol/wire/event_codec.h"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <utility>

#include "backend/protocol/wire/event_fields.h"
#include "backend/protocol/wire/json_fields.h"

namespace fs::protocol {

namespace {

// A header key from event_fields.h (NOTE [Event field tables]).
const char* headerKey(HeaderField f) {
  return fieldDecl(f).name.data();
}

using Json = nlohmann::json;

bool isBlank(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t' || c == '\r'; });
}

// nlohmann messages start with "[json.exception.parse_error.101] "; users need the rest.
std::string parseErrorText(const char* what) {
  std::string s = what;
  if (!s.empty() && s[0] == '[') {
    auto close = s.find("] ");
    if (close != std::string::npos) s = s.substr(close + 2);
  }
  return s;
}

std::string versionText(SchemaVersion v) {
  return std::to_string(v.major) + "." + std::to_string(v.minor);
}

}  // namespace

StatusOr<SchemaVersion> parseSchemaVersion(std::string_view text) {
  auto bad = [&] {
    return Status::invalidArgument("schema version '" + std::string(text) +
                                   "' is not of the form MAJOR.MINOR");
  };
  auto dot = text.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == text.size()) return bad();
  SchemaVersion v;
  auto parse = [](std::string_view part, int* out) {
    if (part.empty() || part.size() > 6 || part.find_first_not_of("0123456789") != std::string_view::npos)
      return false;
    auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), *out);
    return ec == std::errc() && p == part.data() + part.size();
  };
  if (!parse(text.substr(0, dot), &v.major) || !parse(text.substr(dot + 1), &v.minor)) return bad();
  return v;
}

Status checkSchemaVersion(SchemaVersion theirs, SchemaVersion ours, std::string_view what) {
  std::string prefix = what.empty() ? std::string() : std::string(what) + ": ";
  if (theirs.major > ours.major) {
    return Status::unsupported(prefix + "schema version " + versionText(theirs) +
                               " is newer than this reader (" + std::to_string(ours.major) +
                               ".x); update Flamingo Studio");
  }
  if (theirs.major < ours.major) {
    return Status::unsupported(prefix + "schema version " + versionText(theirs) +
                               " is older than this reader (" + std::to_string(ours.major) + ".x) supports");
  }
  return Status::ok();
}

std::string encodeEventLine(const Event& event) {
  return json_fields::typedLine(kEventSchemaVersion, event.seq, event.t, eventType(event.body),
                                bodyToJson(event.body));
}

// ---- encoder -------------------------------------------------------------------------------

EventEncoder::EventEncoder(std::uint64_t first_seq, Clock clock)
    : next_seq_(first_seq), clock_(std::move(clock)) {}

Event EventEncoder::stamp(EventBody body) {
  Event e;
  e.seq = next_seq_++;
  e.t = clock_ ? clock_() : unixMillisNow();
  e.body = std::move(body);
  return e;
}

std::string EventEncoder::encode(EventBody body) {
  return encodeEventLine(stamp(std::move(body)));
}

std::string EventEncoder::encode(EventBody body, std::int64_t t_ms) {
  Event e{next_seq_++, t_ms, std::move(body)};
  return encodeEventLine(e);
}

// ---- one line ------------------------------------------------------------------------------

std::optional<DecodedLine> decodeEventLine(std::string_view line, std::uint64_t line_number,
                                           std::uint64_t offset, std::string_view source_name) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (offset == 0 && line.starts_with("\xEF\xBB\xBF")) line.remove_prefix(3);  // UTF-8 BOM
  if (isBlank(line)) return std::nullopt;

  DecodedLine out;
  out.line = line_number;
  out.offset = offset;
  std::string where = std::string(source_name) + " line " + std::to_string(line_number);
  auto fail = [&](const std::string& what) {
    out.kind = DecodedLine::Kind::kError;
    out.error = Status::corruption(where + " (byte offset " + std::to_string(offset) + "): " + what);
    return out;
  };

  if (!json_fields::nestingWithin(line, json_fields::kMaxJsonNesting)) {  // NOTE [JSON nesting]
    return fail(json_fields::nestingProblem() + "; not an event");
  }
  Json obj;
  try {
    obj = Json::parse(line.begin(), line.end());
  } catch (const std::exception& e) {
    return fail("malformed JSON: " + parseErrorText(e.what()));
  } catch (...) {
    return fail("malformed JSON");
  }
  if (!obj.is_object()) return fail("expected a JSON object, found " + json_fields::kindOf(obj));

  // The version first: a newer major may have changed everything else.
  auto v = obj.find(headerKey(HeaderField::kV));
  if (v == obj.end()) return fail("missing required field 'v' (schema version)");
  if (!v->is_string())
    return fail("field 'v' is " + json_fields::brief(*v) + ", expected a string \"MAJOR.MINOR\"");
  auto version = parseSchemaVersion(v->get_ref<const std::string&>());
  if (!version) return fail(version.status().message());
  out.version = version.value();
  Status compatible = checkSchemaVersion(out.version, {kEventSchemaMajor, kEventSchemaMinor}, where);
  if (!compatible) {
    out.kind = DecodedLine::Kind::kError;
    out.error = compatible;
    return out;
  }

  std::string error;
  json_fields::JsonReader header(obj, "", &error);
  std::uint64_t seq = 0;
  header.req(headerKey(HeaderField::kSeq), seq);
  if (error.empty()) out.seq = seq;
  std::int64_t t = 0;
  header.req(headerKey(HeaderField::kT), t);
  header.req(headerKey(HeaderField::kType), out.type);
  if (!error.empty()) return fail(error);

  auto body = bodyFromJson(out.type, obj);
  if (!body) {
    if (body.status().code() == Status::Code::kNotFound) {
      out.kind = DecodedLine::Kind::kSkipped;
      return out;
    }
    return fail("seq " + std::to_string(seq) + ": " + body.status().message());
  }
  out.kind = DecodedLine::Kind::kEvent;
  out.event = Event{seq, t, std::move(body).value()};
  return out;
}

// ---- stream ---------------------------------------------------------------------------------

EventDecoder::EventDecoder(EventDecoderOptions options)
    : options_(std::move(options)), lines_(options_.max_line_bytes, options_.start_offset) {}

std::vector<DecodedLine> EventDecoder::feed(std::string_view bytes) {
  std::vector<DecodedLine> out;
  lines_.feed(bytes, [&](const LineSplitter::Line& line) {
    const std::uint64_t number = options_.start_line + line.number;
    if (line.truncated) {
      DecodedLine err;
      err.kind = DecodedLine::Kind::kError;
      err.too_long = true;
      err.line = number;
      err.offset = line.offset;
      err.error = Status::corruption(options_.source_name + " line " + std::to_string(number) +
                                     " (byte offset " + std::to_string(line.offset) + "): line longer than " +
                                     std::to_string(options_.max_line_bytes) + " bytes; skipped");
      out.push_back(std::move(err));
      return;
    }
    auto decoded = decodeEventLine(line.text, number, line.offset, options_.source_name);
    if (decoded) {
      decoded->end_offset = line.offset + line.text.size() + 1;
      out.push_back(std::move(*decoded));
    }
  });
  return out;
}

// ---- sequence checks -------------------------------------------------------------------------

void SeqTracker::observe(std::uint64_t seq) {
  if (seq == expected_) {
    ++expected_;
    return;
  }
  if (seq > expected_) {
    report_.gaps.push_back({expected_, seq - 1});
    expected_ = seq + 1;
    return;
  }
  // seq < expected_: fills a gap (late) or repeats one already seen (duplicate).
  auto& gaps = report_.gaps;
  auto it = std::find_if(gaps.begin(), gaps.end(),
                         [&](const SeqGap& g) { return g.first <= seq && seq <= g.last; });
  if (it == gaps.end()) {
    report_.duplicates.push_back(seq);
    return;
  }
  report_.late.push_back(seq);
  SeqGap g = *it;
  it = gaps.erase(it);
  if (seq < g.last) it = gaps.insert(it, {seq + 1, g.last});
  if (seq > g.first) gaps.insert(it, {g.first, seq - 1});
}

std::string SeqReport::summary() const {
  if (ok()) return "ok";
  std::string s;
  auto list = [&](const char* label, auto&& items, auto&& fmt) {
    if (items.empty()) return;
    if (!s.empty()) s += "; ";
    s += label;
    bool first = true;
    for (const auto& i : items) {
      s += first ? " " : ", ";
      s += fmt(i);
      first = false;
    }
  };
  list("missing", gaps, [](const SeqGap& g) {
    return g.first == g.last ? std::to_string(g.first)
                             : std::to_string(g.first) + ".." + std::to_string(g.last);
  });
  auto num = [](std::uint64_t v) { return std::to_string(v); };
  list("duplicate", duplicates, num);
  list("late", late, num);
  return s;
}

SeqReport checkSeqs(std::span<const std::uint64_t> seqs, std::uint64_t first) {
  SeqTracker tracker(first);
  for (auto s : seqs) tracker.observe(s);
  return tracker.report();
}

}  // namespace fs::protocol
