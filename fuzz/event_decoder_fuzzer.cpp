// Fuzz target, differential: events.jsonl through both decoders of the wire.
//  1. Each line through the GUI's simdjson fast path (app::FastEventDecoder, both
//     the copying and the padded entry points) and through
//     protocol::decodeEventLine: when the fast path takes a line it must produce
//     exactly the protocol decoder's event (NOTE [Fast decode path]); doubles are
//     compared by their bits, so NaN == NaN and -0.0 != 0.0.
//  2. The whole input through the incremental protocol::EventDecoder, fed in
//     uneven pieces, against decodeEventLine line by line: same records, lines
//     and offsets.
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "app/monitor/fast_event_decoder.h"
#include "backend/protocol/wire/event_codec.h"
#include "fuzz/fuzz_util.h"
#include "tests/fixtures/step_event_text.h"

namespace {

namespace proto = fs::protocol;
using fs::app::FastEventDecoder;

using fs::testing::stepEventText;

// Any event: its fields through the wire's own JSON (steps by their bits).
std::string canonical(const proto::Event& e) {
  if (std::holds_alternative<proto::StepEvent>(e.body)) return stepEventText(e);
  return std::to_string(e.seq) + " " + std::to_string(e.t) + " " + std::string(proto::eventType(e.body)) +
         " " + proto::bodyToJson(e.body).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string canonical(const std::optional<proto::DecodedLine>& d) {
  if (!d) return "none";
  std::string out = "kind=" + std::to_string(static_cast<int>(d->kind)) + " line=" + std::to_string(d->line) +
                    " offset=" + std::to_string(d->offset) + " end=" + std::to_string(d->end_offset) + " ";
  switch (d->kind) {
    case proto::DecodedLine::Kind::kEvent:
      return out + canonical(d->event);
    case proto::DecodedLine::Kind::kSkipped:
      return out + "skipped " + d->type;
    case proto::DecodedLine::Kind::kError:
      return out + "error " + d->error.message();
  }
  return out;
}

void compareFastPath(FastEventDecoder& fast, std::string_view line) {
  const auto ref = proto::decodeEventLine(line, 1, 0);
  const bool refEvent = ref && ref->kind == proto::DecodedLine::Kind::kEvent;
  const std::string shown(line.substr(0, 2000));
  for (bool padded : {false, true}) {
    fs::app::StepRecord rec;
    proto::Event memory;
    FastEventDecoder::Result result;
    if (padded) {
      std::string copy(line);
      copy.append(FastEventDecoder::padding(), '\0');
      result = fast.decodePadded(std::string_view(copy.data(), line.size()), &rec, &memory);
    } else {
      result = fast.decode(line, &rec, &memory);
    }
    if (result == FastEventDecoder::Result::kNotHandled) continue;
    fs::fuzz::check(refEvent,
                    "the fast path took a line the protocol decoder does not read as an event: " + shown);
    if (result == FastEventDecoder::Result::kStep) {
      fs::fuzz::check(std::holds_alternative<proto::StepEvent>(ref->event.body),
                      "the fast path read a step the protocol decoder reads as another type: " + shown);
      const std::string got = canonical(fs::app::toStepEvent(rec));
      const std::string want = canonical(ref->event);
      fs::fuzz::check(got == want, "fast != protocol for " + shown + "\n fast: " + got + "\n want: " + want);
    } else {
      fs::fuzz::check(
          std::holds_alternative<proto::MemoryEvent>(ref->event.body),
          "the fast path read a memory event the protocol decoder reads as another type: " + shown);
      fs::fuzz::check(memory == ref->event, "fast != protocol (memory) for " + shown);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static FastEventDecoder fast;
  if (size == 0) return 0;
  const std::size_t piece = 1 + data[0] % 61;
  const std::string_view input = fs::fuzz::text(data + 1, size - 1);

  // 1. line by line, fast path against the protocol decoder; and the expected
  //    records of the incremental decoder.
  std::vector<std::string> expected;
  std::uint64_t offset = 0, lineNo = 1;
  for (std::string_view rest = input;;) {
    const auto nl = rest.find('\n');
    if (nl == std::string_view::npos) break;  // an unterminated last line is held back
    const std::string_view line = rest.substr(0, nl);
    compareFastPath(fast, line);
    auto ref = proto::decodeEventLine(line, lineNo, offset);
    if (ref) {
      ref->end_offset = offset + nl + 1;  // the incremental decoder knows where the line ends
      expected.push_back(canonical(ref));
    }
    offset += nl + 1;
    ++lineNo;
    rest = rest.substr(nl + 1);
  }

  // 2. the incremental decoder in pieces.
  proto::EventDecoder decoder;
  std::vector<std::string> got;
  for (std::size_t at = 0; at < input.size(); at += piece) {
    for (const auto& d : decoder.feed(input.substr(at, piece))) got.push_back(canonical(d));
  }
  fs::fuzz::check(got.size() == expected.size(), "EventDecoder gave " + std::to_string(got.size()) +
                                                     " records, decodeEventLine " +
                                                     std::to_string(expected.size()));
  for (std::size_t i = 0; i < got.size(); ++i) {
    fs::fuzz::check(got[i] == expected[i], "EventDecoder != decodeEventLine at record " + std::to_string(i) +
                                               "\n incremental: " + got[i] + "\n line: " + expected[i]);
  }
  fs::fuzz::check(decoder.resumeOffset() == offset, "resumeOffset is not the end of the last line");
  return 0;
}
