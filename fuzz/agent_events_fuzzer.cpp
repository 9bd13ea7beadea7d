// Fuzz target: what a launcher reads back from a run directory on a remote
// host. The input is decoded both as agent-<node>.jsonl
// (protocol::decodeAgentEvents, so decodeAgentEvent line by line) and as
// launch.json (protocol::decodeLaunchRecord). Checked: every error has a
// message; the file's counts add up (events + errors + skipped <= lines, no
// byte past the last '\n' consumed); every decoded event and a decoded launch
// record encode again and decode to themselves.
#include <algorithm>

#include "backend/protocol/wire/agent_events.h"
#include "backend/protocol/wire/launch_record.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fs::protocol;
  const std::string_view input = fs::fuzz::text(data, size);

  const AgentEventFile file = decodeAgentEvents(input, "agent-fuzz.jsonl");
  const auto lines = static_cast<std::size_t>(std::count(input.begin(), input.end(), '\n'));
  fs::fuzz::check(file.events.size() + file.errors.size() + file.skipped <= lines,
                  "more records than complete lines");
  const std::size_t lastNewline = input.rfind('\n');
  fs::fuzz::check(file.complete_bytes == (lastNewline == std::string_view::npos ? 0 : lastNewline + 1),
                  "complete_bytes is not the end of the last line: " + std::to_string(file.complete_bytes));
  for (const Status& error : file.errors) {
    fs::fuzz::check(!error.isOk() && error.message().starts_with("agent-fuzz.jsonl line "),
                    "an error that does not name the file and line: " + error.message());
  }
  for (const AgentEvent& event : file.events) {
    const std::string line = encodeAgentEvent(event);
    fs::fuzz::check(!line.empty() && line.back() == '\n' && line.find('\n') == line.size() - 1,
                    "an encoded event is not one line: " + line);
    auto again = decodeAgentEvent(std::string_view(line).substr(0, line.size() - 1), "encoded");
    fs::fuzz::check(again.isOk(),
                    "an encoded event does not decode: " + line + " " + again.status().message());
    fs::fuzz::check(again.value() == event, "decode(encode(e)) != e for " + line);
  }

  auto record = decodeLaunchRecord(input, "launch-fuzz.json");
  if (!record) {
    fs::fuzz::check(record.status().message().starts_with("launch-fuzz.json"),
                    "a launch.json error that does not name the file: " + record.status().message());
    return 0;
  }
  fs::fuzz::check(validateLaunchRecord(record.value()).isOk(), "a decoded launch record does not validate");
  const std::string encoded = encodeLaunchRecord(record.value());
  auto again = decodeLaunchRecord(encoded, "encoded.json");
  fs::fuzz::check(again.isOk(), "the encoded launch record does not decode: " + encoded);
  LaunchRecord want = record.value();
  want.schema_version = again->schema_version;  // the writer stamps its own version
  fs::fuzz::check(again.value() == want, "decode(encode(r)) != r for " + encoded);
  return 0;
}
