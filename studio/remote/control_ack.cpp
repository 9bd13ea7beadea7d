#include "studio/remote/control_ack.h"

#include <unistd.h>

#include <chrono>
#include <ostream>
#include <thread>

#include "studio/remote/remote_cli.h"
#include "studio/remote/wait_line.h"

namespace fs::studio::remote {

int awaitControlAck(app::remote::Host& host, const std::string& file, std::uint64_t offset, std::uint64_t seq,
                    int timeoutS, std::ostream& out, std::ostream& err, std::size_t maxLineBytes) {
  const auto begin = std::chrono::steady_clock::now();
  const auto deadline = begin + std::chrono::seconds(timeoutS);
  // The wait is drawn on a terminal only; `err` is stderr in the real front end.
  WaitLine waitLine(err, ::isatty(STDERR_FILENO) != 0, "the control_ack of seq " + std::to_string(seq),
                    timeoutS);
  protocol::EventDecoderOptions options;
  options.source_name = host.name() + ":" + file;
  options.start_offset = offset;
  options.max_line_bytes = maxLineBytes;
  protocol::EventDecoder decoder(options);
  while (std::chrono::steady_clock::now() < deadline) {
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
            ack != nullptr && ack->control_seq == seq) {
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
  }
  waitLine.clear();
  err << host.name() << ": no control_ack for seq " << seq << " within " << timeoutS
      << " s; the command stays in control/ and the engine acts on it when it next polls (is the run "
         "paused in a long step, or stopped?)\n";
  return kExitFailure;
}

}  // namespace fs::studio::remote
