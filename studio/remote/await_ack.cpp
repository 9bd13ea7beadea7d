#include "studio/remote/await_ack.h"

#include <unistd.h>

#include <chrono>
#include <thread>
#include <variant>

#include "backend/protocol/wire/event_codec.h"
#include "studio/remote/remote_cli.h"
#include "studio/remote/wait_line.h"

namespace fs::studio::remote {

int awaitControlAck(app::remote::Host& host, const std::string& eventsFile, std::uint64_t offset,
                    std::uint64_t seq, std::string_view verb, int timeoutS, std::ostream& out,
                    std::ostream& err) {
  const auto begin = std::chrono::steady_clock::now();
  const auto deadline = begin + std::chrono::seconds(timeoutS);
  // The wait is drawn on a terminal only; `err` is stderr in the real front end.
  const std::string what = std::string(verb) + " (seq " + std::to_string(seq) + ")";
  WaitLine waitLine(err, ::isatty(STDERR_FILENO) != 0, "the control_ack of " + what, timeoutS);
  std::string pending;
  std::uint64_t lineNo = 0;
  do {
    auto chunk = host.readFile(eventsFile, offset, 1u << 20);
    if (chunk && !chunk->empty()) {
      offset += chunk->size();
      pending += chunk.value();
      std::size_t start = 0;
      for (auto nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n', start)) {
        const std::string_view line(pending.data() + start, nl - start);
        start = nl + 1;
        auto decoded = protocol::decodeEventLine(line, ++lineNo, 0, eventsFile);
        if (!decoded || decoded->kind != protocol::DecodedLine::Kind::kEvent) continue;
        if (const auto* ack = std::get_if<protocol::ControlAckEvent>(&decoded->event.body);
            ack != nullptr && ack->control_seq == seq && ack->verb == verb) {
          waitLine.clear();
          out << (ack->ok ? "done" : "refused") << ": " << ack->verb << " (seq " << seq << ") at step "
              << ack->step << (ack->message.empty() ? std::string() : ": " + ack->message) << "\n";
          return ack->ok ? kExitOk : kExitFailure;
        }
      }
      pending.erase(0, start);
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
