#include "app/history/run_dir_reader.h"

#include <QFile>
#include <QFileInfo>
#include <memory>
#include <optional>
#include <variant>

#include "app/monitor/local_file_source.h"
#include "backend/protocol/wire/event_codec.h"
#include "backend/protocol/wire/run_manifest.h"

namespace fs::app {
namespace {

using protocol::Status;

QString fromStd(std::string_view s) {
  return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

QMap<QString, double> toLosses(const std::map<std::string, double>& m) {
  QMap<QString, double> out;
  for (const auto& [k, v] : m) out.insert(fromStd(k), v);
  return out;
}

QString joinHosts(const std::vector<std::string>& hosts) {
  QStringList list;
  for (const auto& h : hosts) list << fromStd(h);
  return list.join(QStringLiteral(", "));
}

// What the events of one run say, folded line by line.
class EventFold {
 public:
  explicit EventFold(RunRecord* record) : r_(record) {}

  void apply(const protocol::Event& e) {
    std::visit([&](const auto& body) { on(body, e.t); }, e.body);
  }

  // Settles status, times and hosts once every event is in; the manifest
  // fills what the events did not say.
  void finish(const protocol::RunManifest& m) {
    if (r_->startedMs == 0) r_->startedMs = m.created;
    if (!m.hosts.empty()) r_->host = joinHosts(m.hosts);
    if (!m.engine_version.empty()) r_->engineVersion = fromStd(m.engine_version);
    if (finishStatus_) {
      r_->status = *finishStatus_;
    } else if (!r_->error.isEmpty()) {
      r_->status = QStringLiteral("failed");
      r_->endedMs = errorMs_;
    } else if (protocol::isTerminal(m.state) || lastState_.isEmpty()) {
      // Ended without a run_finished (killed, or the launcher saw it die), or no
      // events at all: run.json is the newer word.
      r_->status = fromStd(protocol::toString(m.state));
      if (protocol::isTerminal(m.state)) r_->endedMs = m.updated;
    } else {
      r_->status = lastState_;
      r_->endedMs = stateEndMs_;  // 0 unless the last state is final
    }
  }

 private:
  void on(const protocol::RunStartedEvent& b, qint64 t) {
    if (r_->startedMs == 0) r_->startedMs = t;  // a resumed run keeps its first start
    r_->totalSteps = b.total_steps;
    r_->host = joinHosts(b.hosts);
    r_->engineVersion = fromStd(b.engine_version);
    // A new attempt: what ended the previous one no longer holds.
    finishStatus_.reset();
    r_->error.clear();
    r_->endedMs = 0;
    lastState_ = QStringLiteral("running");
    stateEndMs_ = 0;
  }
  void on(const protocol::StepEvent& b, qint64) {
    r_->lastStep = std::max<qint64>(r_->lastStep, b.step);
    if (!b.loss.empty()) r_->finalLosses = toLosses(b.loss);
  }
  void on(const protocol::RollbackEvent&, qint64) { ++r_->rollbacks; }
  void on(const protocol::CheckpointEvent& b, qint64 t) {
    CheckpointEntry c;
    c.path = fromStd(b.path);
    c.step = b.step;
    c.epoch = b.epoch;
    c.kind = fromStd(protocol::toString(b.kind));
    c.bytes = b.bytes;
    c.timeMs = t;
    for (CheckpointEntry& old : r_->checkpoints) {
      if (old.path == c.path) {  // rewritten (e.g. checkpoint_final.pt after a resume)
        old = c;
        return;
      }
    }
    r_->checkpoints.append(c);
  }
  void on(const protocol::StateEvent& b, qint64 t) {
    lastState_ = fromStd(protocol::toString(b.state));
    stateEndMs_ = protocol::isTerminal(b.state) ? t : 0;
  }
  void on(const protocol::RunFinishedEvent& b, qint64 t) {
    finishStatus_ = historyStatus(b.status);
    r_->lastStep = std::max<qint64>(r_->lastStep, b.steps);
    if (!b.final_loss.empty()) r_->finalLosses = toLosses(b.final_loss);
    r_->endedMs = t;
  }
  void on(const protocol::ErrorEvent& b, qint64 t) {
    if (!r_->error.isEmpty()) return;  // the first error is the cause; later ones follow from it
    r_->error = fromStd(b.message);
    errorMs_ = t;
  }
  template <class Other>
  void on(const Other&, qint64) {}

  RunRecord* r_;
  std::optional<QString> finishStatus_;
  QString lastState_;
  qint64 stateEndMs_ = 0;  // time of a final `state` event
  qint64 errorMs_ = 0;
};

constexpr std::size_t kMaxManifestBytes = 1u << 20;
constexpr std::size_t kMaxConfigBytes = 16u << 20;

// A missing file is fine (a run just created): false, nothing read.
protocol::StatusOr<bool> readConfig(RunDirSource& dir, const std::string& relativePath, QString* text) {
  const std::unique_ptr<ByteSource> file = dir.open(relativePath);
  auto bytes = readWhole(*file, kMaxConfigBytes);
  if (!bytes.isOk()) {
    if (bytes.status().code() == Status::Code::kNotFound) return false;
    return bytes.status();
  }
  *text = QString::fromStdString(bytes.value());
  return true;
}

Status scanEvents(RunDirSource& dir, const RunDirReadOptions& options, RunDirImport* out, EventFold* fold) {
  const std::unique_ptr<ByteSource> file = dir.open(std::string(protocol::kEventsFileName));
  auto st = file->stat();
  if (!st.isOk()) return st.status().code() == Status::Code::kNotFound ? Status::ok() : st.status();
  out->hasEvents = true;
  const qint64 total = static_cast<qint64>(st->size);
  qint64 done = 0;
  protocol::EventDecoderOptions decoderOptions;
  decoderOptions.source_name = file->describe();
  protocol::EventDecoder decoder(decoderOptions);
  std::string chunk(static_cast<std::size_t>(qMax<qint64>(1, options.chunkBytes)), '\0');
  for (;;) {
    if (options.cancel != nullptr && options.cancel->load(std::memory_order_relaxed)) {
      out->cancelled = true;
      return Status::ok();
    }
    auto got = file->read(static_cast<std::uint64_t>(done), chunk.data(), chunk.size());
    if (!got.isOk()) return got.status();
    if (*got == 0) break;  // the end (of what has been written so far)
    done += static_cast<qint64>(*got);
    for (const protocol::DecodedLine& line : decoder.feed(std::string_view(chunk.data(), *got))) {
      if (line.kind == protocol::DecodedLine::Kind::kEvent) {
        fold->apply(line.event);
      } else if (line.kind == protocol::DecodedLine::Kind::kError) {
        if (out->badLines++ == 0) out->firstBadLine = fromStd(line.error.message());
      }
    }
    if (options.progress) options.progress(done, qMax(total, done));
  }
  // A partial last line is a write in progress (docs/telemetry.md): not an event yet.
  return Status::ok();
}

QString lastComponent(const QString& path) {
  QString trimmed = path;
  while (trimmed.size() > 1 && trimmed.endsWith(QLatin1Char('/'))) trimmed.chop(1);
  return trimmed.section(QLatin1Char('/'), -1);
}

}  // namespace

QString historyStatus(protocol::FinishStatus status) {
  switch (status) {
    case protocol::FinishStatus::kOk:
      return QStringLiteral("finished");
    case protocol::FinishStatus::kStopped:
      return QStringLiteral("stopped");
    case protocol::FinishStatus::kFailed:
      return QStringLiteral("failed");
  }
  return QStringLiteral("failed");
}

protocol::StatusOr<RunDirImport> readRunDirectory(RunDirSource& source, const QString& runDir,
                                                  const RunDirReadOptions& options) {
  // The folder first: a missing one is "no such run directory", not a file to wait for.
  if (auto entries = source.list("."); !entries.isOk()) {
    if (entries.status().code() != Status::Code::kNotFound) return entries.status();
    return Status::notFound(source.describe() + ": no such run directory (no run.json)");
  }
  const std::unique_ptr<ByteSource> manifestFile = source.open(std::string(protocol::kManifestFileName));
  auto text = readWhole(*manifestFile, kMaxManifestBytes);
  if (!text.isOk()) return text.status();
  auto manifest = protocol::decodeManifest(text.value(), manifestFile->describe());
  if (!manifest.isOk()) return manifest.status();
  const protocol::RunManifest& m = manifest.value();

  RunDirImport out;
  RunRecord& r = out.record;
  r.runId = fromStd(m.run_id);
  r.name = lastComponent(runDir);
  r.runDir = runDir;
  if (auto config = readConfig(source, m.config_file, &r.configYaml); !config.isOk()) return config.status();
  EventFold fold(&r);
  if (Status s = scanEvents(source, options, &out, &fold); !s) return s;
  if (out.cancelled) return out;
  fold.finish(m);
  return out;
}

protocol::StatusOr<RunDirImport> readRunDirectory(const QString& runDir, const RunDirReadOptions& options) {
  const QString absDir = QFileInfo(runDir).absoluteFilePath();
  LocalRunDir source(std::filesystem::path(QFile::encodeName(absDir).toStdString()));
  return readRunDirectory(source, absDir, options);
}

}  // namespace fs::app
