#include "studio/remote/control_ack.h"

#include <unistd.h>

#include <chrono>
#include <ostream>
#include <thread>

#include "studio/remote/remote_cli.h"
#include "studio/remote/wait_line.h"

namespace fs::studio::remote {

int awaitControlAck(app::remote::Host& host, const std::string& file, std::uint64_t offset, std::uint64_t seq,
                    std::string_view verb, int timeoutS, std::ostream& out, std::ostream& err,
                    std::size_t maxLineBytes) {
  const auto begin = std::chrono::steady_clock::now();
  const auto deadline = begin + std::chrono::seconds(timeoutS);
  // The wait is drawn on a terminal only; `err` is stderr in the real front end.
  const std::string what = std::string(verb) + " (seq " + std::to_string(seq) + ")";
  WaitLine waitLine(err, ::isatty(STDERR_FILENO) != 0, "the control_ack of " + what, timeoutS);
  protocol::EventDecoderOptions options;
  options.source_name = host.name() + ":" + file;
  options.start_offset = offset;
  options.max_line_bytes = maxLineBytes;
  protocol::EventDecoder decoder(options);
  do {
    auto chunk = host.readFile(file, offset, 1u << 20);
    if (chunk && !chunk->empty()) {
      offset += chunk->size();
      for (const protocol::DecodedLine& decoded : decoder.feed(chunk.value())) {
        if (decoded.too_long) {
          waitLine.clear();
          err << decoded.error.message() << "\n";
          continue;
        }
        if (decoded.kind != protocol::DecodedLine::Kind::kEvent) continue;
        if (const auto* ack = std::get_if<protocol::ControlAckEvent>(&decoded.event.body);
            ack != nullptr && ack->control_seq == seq && ack->verb == verb) {
          waitLine.clear();
          out << (ack->ok ? "done" : "refused") << ": " << ack->verb << " (seq " << seq << ") at step "
              << ack->step << (ack->message.empty() ? std::string() : ": " + ack->message) << "\n";
          return ack->ok ? kExitOk : kExitFailure;
        }
      }
      continue;
    }
    waitLine.update(std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count());
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  } while (std::chrono::steady_clock::now() < deadline);
  waitLine.clear();
  err << host.name() << ": no control_ack for " << what << " within " << timeoutS
      << " s; the command stays in control/ and the engine acts on it when it next polls (is the run "
         "paused in a long step, or stopped?)\n";
  return kExitFailure;
}

}  // namespace fs::studio::remote
