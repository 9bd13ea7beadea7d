// Waiting for a control command's answer: the `control_ack` of one seq AND verb in a
// run's events.jsonl on a Host (`remote stop|kill|pause|resume|checkpoint`).
//
// Blocks on the Host, polling; draws a WaitLine on `err` when stderr is a terminal.
// Thread-safety: the command's thread only.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

#include "app/remote/remote_host.h"

namespace fs::studio::remote {

// Reads `eventsFile` from byte `offset` on (at least once, then until `timeoutS` passes)
// for the control_ack whose seq is `seq` and whose verb is `verb`; an ack for `seq` with
// another verb is another client's command (NOTE [Control seq claims] in
// backend/protocol/wire/control_file.h) and is passed over. Prints "done: ..." or
// "refused: ..." to `out` and returns kExitOk / kExitFailure; no ack in time: says so on
// `err`, kExitFailure.
int awaitControlAck(app::remote::Host& host, const std::string& eventsFile, std::uint64_t offset,
                    std::uint64_t seq, std::string_view verb, int timeoutS, std::ostream& out,
                    std::ostream& err);

}  // namespace fs::studio::remote
