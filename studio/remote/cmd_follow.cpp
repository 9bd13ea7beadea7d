// remote follow: events.jsonl of a run on a host, read from the last complete line
// on every poll (app/monitor/host_file_source.h), as a progress line or as the raw
// JSON lines; a dropped connection is retried and the follow resumes where it was.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iomanip>
#include <sstream>
#include <thread>

#include "app/monitor/host_file_source.h"
#include "backend/protocol/wire/event_codec.h"
#include "backend/protocol/wire/run_dir.h"
#include "backend/protocol/wire/run_manifest.h"
#include "studio/remote/cli_context.h"
#include "studio/remote/commands.h"
#include "studio/remote/remote_cli.h"
#include "studio/remote/terminal_text.h"

namespace fs::studio::remote {

namespace {

const char* const kUsage = "usage: flamingo-studio remote follow HOST:RUN_DIR [--jsonl] [options]\n";
const char* const kHelp =
    "\nFollows the run's events.jsonl over SSH until the run has finished: a progress line (step, losses\n"
    "per dataset, state), or with --jsonl every event line copied to stdout as the engine wrote it. A\n"
    "lost connection is retried (the state goes to stderr) and the follow resumes after the last\n"
    "complete line: nothing is lost or repeated; seq gaps are reported. Exit 0 when the run finished\n"
    "ok, 1 when it failed or could not be followed.\n";

using Clock = std::chrono::steady_clock;

struct Progress {
  std::int64_t step = 0, total = 0;
  std::string losses, state = "starting";
  std::string line() const {
    std::ostringstream o;
    o << "step " << step;
    if (total > 0) o << "/" << total;
    o << "  " << losses << "  " << state;
    return o.str();
  }
};

void describeStep(const protocol::StepEvent& s, Progress* p) {
  p->step = s.step;
  std::ostringstream o;
  o << std::setprecision(4);
  for (const auto& [name, value] : s.loss) o << (o.tellp() > 0 ? " " : "") << name << " " << value;
  p->losses = "loss " + o.str();
}

}  // namespace

int cmdFollow(const Args& args, std::ostream& out, std::ostream& err) {
  auto start =
      startCommand(args, kUsage, kHelp,
                   {{"jsonl", false, false, "", "Copy the event lines to stdout instead of a progress line"},
                    {"poll-ms", true, false, "MS", "Poll interval while the run is quiet (default 200)"}},
                   1, 1, out, err);
  if (start.exitCode >= 0) return start.exitCode;
  auto where = parseRunLocation(start.args.positionals[0]);
  if (!where) {
    err << "flamingo-studio remote follow: " << where.status().message() << "\n";
    return kExitUsage;
  }
  int pollMs = 200;
  try {
    pollMs = std::max(10, std::stoi(start.args.get("poll-ms", "200")));
  } catch (const std::exception&) {
    err << "flamingo-studio remote follow: --poll-ms takes milliseconds\n";
    return kExitUsage;
  }
  auto host = start.ctx->open(where->host);
  if (!host) {
    err << host.status().message() << "\n";
    return kExitFailure;
  }
  const bool jsonl = start.args.has("jsonl");
  const bool tty = !jsonl && ::isatty(STDOUT_FILENO);
  const std::string eventsPath = where->runDir + "/" + std::string(protocol::kEventsFileName);
  app::HostFileSource source(*host.value(), eventsPath);
  std::uint64_t offset = 0, lineNo = 0;
  std::optional<std::uint64_t> lastSeq;
  std::string pending;
  std::vector<char> buf(1u << 20);
  Progress progress;
  std::optional<Clock::time_point> lostSince;
  std::string lastError;
  int exitCode = -1;
  while (exitCode < 0) {
    auto n = source.read(offset, buf.data(), buf.size());
    if (!n) {
      if (n.status().code() == protocol::Status::Code::kNotFound) {
        std::this_thread::sleep_for(std::chrono::milliseconds(pollMs));  // not written yet
        continue;
      }
      if (!lostSince) lostSince = Clock::now();
      if (n.status().message() != lastError) err << "connection: " << n.status().message() << "; retrying\n";
      lastError = n.status().message();
      std::this_thread::sleep_for(std::chrono::milliseconds(std::max(pollMs, 1000)));
      continue;
    }
    if (lostSince) {
      const double s = std::chrono::duration<double>(Clock::now() - *lostSince).count();
      err << "connection: back after " << std::fixed << std::setprecision(1) << s << " s; resuming at byte "
          << offset << "\n";
      lostSince.reset();
      lastError.clear();
    }
    if (n.value() == 0) {
      // Quiet: a run that ended without run_finished (killed) is over when run.json says so.
      auto manifest =
          host.value()->readFile(where->runDir + "/" + std::string(protocol::kManifestFileName), 0, 1u << 20);
      if (manifest) {
        auto m = protocol::decodeManifest(manifest.value());
        if (m && (m->state == protocol::RunState::kFailed || m->state == protocol::RunState::kFinished) &&
            pending.empty()) {
          exitCode = m->state == protocol::RunState::kFinished ? kExitOk : kExitFailure;
          break;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(pollMs));
      continue;
    }
    offset += n.value();
    pending.append(buf.data(), n.value());
    std::size_t begin = 0;
    for (auto nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n', begin)) {
      const std::string_view line(pending.data() + begin, nl - begin);
      begin = nl + 1;
      auto decoded = protocol::decodeEventLine(line, ++lineNo, 0, eventsPath);
      if (jsonl) out << line << "\n";
      if (!decoded || decoded->kind != protocol::DecodedLine::Kind::kEvent) continue;
      const protocol::Event& e = decoded->event;
      if (lastSeq && e.seq != *lastSeq + 1) {
        err << "events: seq " << *lastSeq << " then " << e.seq << " ("
            << (e.seq > *lastSeq ? "gap" : "duplicate or reordered") << ")\n";
      }
      lastSeq = e.seq;
      if (const auto* s = std::get_if<protocol::StepEvent>(&e.body)) describeStep(*s, &progress);
      if (const auto* s = std::get_if<protocol::RunStartedEvent>(&e.body)) progress.total = s->total_steps;
      if (const auto* s = std::get_if<protocol::StateEvent>(&e.body)) {
        progress.state = std::string(protocol::toString(s->state));
      }
      if (const auto* f = std::get_if<protocol::RunFinishedEvent>(&e.body)) {
        progress.state = "finished";
        exitCode = f->status == protocol::FinishStatus::kFailed ? kExitFailure : kExitOk;
      }
      if (!jsonl && (tty || std::holds_alternative<protocol::StepEvent>(e.body) || exitCode >= 0)) {
        if (tty) writeTerminalControl(out, "\r\033[K");
        out << progress.line() << (tty ? "" : "\n");
      }
    }
    pending.erase(0, begin);
    out.flush();
  }
  if (tty) out << "\n";
  return exitCode;
}

}  // namespace fs::studio::remote
