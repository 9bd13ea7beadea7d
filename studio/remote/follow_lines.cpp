#include "studio/remote/follow_lines.h"

#include <iomanip>
#include <ostream>
#include <sstream>

#include "studio/remote/remote_cli.h"
#include "studio/remote/terminal_text.h"

namespace fs::studio::remote {

std::string FollowLines::Progress::line() const {
  std::ostringstream o;
  o << "step " << step;
  if (total > 0) o << "/" << total;
  o << "  " << losses << "  " << state;
  return o.str();
}

FollowLines::FollowLines(Options options, std::ostream& out, std::ostream& err)
    : options_(std::move(options)), out_(out), err_(err), lines_(options_.maxLineBytes) {}

void FollowLines::feed(std::string_view bytes) {
  lines_.feed(bytes, [this](const protocol::LineSplitter::Line& line) { handle(line); });
  out_.flush();
}

void FollowLines::handle(const protocol::LineSplitter::Line& line) {
  const std::uint64_t lineNo = line.number + 1;
  if (line.truncated) {
    if (options_.tty) writeTerminalControl(err_, "\r\033[K");
    err_ << options_.source << " line " << lineNo << " (byte offset " << line.offset << "): line longer than "
         << options_.maxLineBytes << " bytes; skipped\n";
    return;
  }
  auto decoded = protocol::decodeEventLine(line.text, lineNo, line.offset, options_.source);
  if (options_.jsonl) out_ << line.text << "\n";
  if (!decoded || decoded->kind != protocol::DecodedLine::Kind::kEvent) return;
  const protocol::Event& e = decoded->event;
  if (last_seq_ && e.seq != *last_seq_ + 1) {
    err_ << "events: seq " << *last_seq_ << " then " << e.seq << " ("
         << (e.seq > *last_seq_ ? "gap" : "duplicate or reordered") << ")\n";
  }
  last_seq_ = e.seq;
  if (const auto* s = std::get_if<protocol::StepEvent>(&e.body)) {
    progress_.step = s->step;
    std::ostringstream o;
    o << std::setprecision(4);
    for (const auto& [name, value] : s->loss) o << (o.tellp() > 0 ? " " : "") << name << " " << value;
    progress_.losses = "loss " + o.str();
  }
  if (const auto* s = std::get_if<protocol::RunStartedEvent>(&e.body)) progress_.total = s->total_steps;
  if (const auto* s = std::get_if<protocol::StateEvent>(&e.body)) {
    progress_.state = std::string(protocol::toString(s->state));
  }
  if (const auto* f = std::get_if<protocol::RunFinishedEvent>(&e.body)) {
    progress_.state = "finished";
    exit_code_ = f->status == protocol::FinishStatus::kFailed ? kExitFailure : kExitOk;
  }
  if (!options_.jsonl &&
      (options_.tty || std::holds_alternative<protocol::StepEvent>(e.body) || exit_code_.has_value())) {
    if (options_.tty) writeTerminalControl(out_, "\r\033[K");
    out_ << progress_.line() << (options_.tty ? "" : "\n");
  }
}

}  // namespace fs::studio::remote
