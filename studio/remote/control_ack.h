// Waiting for a control command's control_ack: `remote stop | kill | checkpoint |
// pause | resume` read the run's events.jsonl on the host from where it ended
// before the command was written, until the engine's control_ack for its seq and
// verb: an ack for the seq with another verb is another client's command (NOTE
// [Control seq claims] in backend/protocol/wire/control_file.h) and is passed over.
//
// Lines go through protocol::EventDecoder, so an unfinished line holds at most
// maxLineBytes (NOTE [Bounded lines] in backend/protocol/wire/line_splitter.h): a
// longer one is reported on `err` and skipped, and the wait reads on.
//
// Threads: the command's thread; blocks (polls the host every 200 ms while quiet).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>

#include "app/remote/remote_host.h"
#include "backend/protocol/wire/event_codec.h"

namespace fs::studio::remote {

// The longest event line the wait decodes: the events' own limit, the one the
// monitor's follower and the engine's resume scan use.
inline constexpr std::size_t kAckMaxLineBytes = protocol::EventDecoderOptions{}.max_line_bytes;

// Reads `file` from `offset` (at least once, then until `timeoutS` passes) until the
// control_ack for `seq` and `verb` arrives (printed on `out`: kExitOk when done,
// kExitFailure when refused); none in time: said on `err`, kExitFailure.
int awaitControlAck(app::remote::Host& host, const std::string& file, std::uint64_t offset, std::uint64_t seq,
                    std::string_view verb, int timeoutS, std::ostream& out, std::ostream& err,
                    std::size_t maxLineBytes = kAckMaxLineBytes);

}  // namespace fs::studio::remote
