#include "app/history/run_dir_reader.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <optional>
#include <variant>

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

Status readConfig(const QString& path, QString* text) {
  QFile f(path);
  if (!f.exists()) return Status::ok();
  if (!f.open(QIODevice::ReadOnly))
    return Status::ioError(QStringLiteral("%1: cannot read: %2").arg(path, f.errorString()).toStdString());
  *text = QString::fromUtf8(f.readAll());
  return Status::ok();
}

Status scanEvents(const QString& path, const RunDirReadOptions& options, RunDirImport* out, EventFold* fold) {
  QFile f(path);
  if (!f.exists()) return Status::ok();
  if (!f.open(QIODevice::ReadOnly))
    return Status::ioError(QStringLiteral("%1: cannot read: %2").arg(path, f.errorString()).toStdString());
  out->hasEvents = true;
  const qint64 total = f.size();
  qint64 done = 0;
  protocol::EventDecoderOptions decoderOptions;
  decoderOptions.source_name = QFile::encodeName(path).toStdString();
  protocol::EventDecoder decoder(decoderOptions);
  QByteArray chunk;
  while (!f.atEnd()) {
    if (options.cancel != nullptr && options.cancel->load(std::memory_order_relaxed)) {
      out->cancelled = true;
      return Status::ok();
    }
    chunk = f.read(qMax<qint64>(1, options.chunkBytes));
    if (chunk.isEmpty()) {
      if (f.error() != QFileDevice::NoError)
        return Status::ioError(
            QStringLiteral("%1: read failed: %2").arg(path, f.errorString()).toStdString());
      break;
    }
    done += chunk.size();
    for (const protocol::DecodedLine& line :
         decoder.feed(std::string_view(chunk.constData(), chunk.size()))) {
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

protocol::StatusOr<RunDirImport> readRunDirectory(const QString& runDir, const RunDirReadOptions& options) {
  const QString absDir = QFileInfo(runDir).absoluteFilePath();
  const protocol::RunDir layout(std::filesystem::path(QFile::encodeName(absDir).toStdString()));
  auto manifest = protocol::readManifest(layout.root());
  if (!manifest.isOk()) return manifest.status();
  const protocol::RunManifest& m = manifest.value();

  RunDirImport out;
  RunRecord& r = out.record;
  r.runId = fromStd(m.run_id);
  r.name = QFileInfo(absDir).fileName();
  r.runDir = absDir;
  if (Status s = readConfig(QDir(absDir).filePath(fromStd(m.config_file)), &r.configYaml); !s) return s;
  EventFold fold(&r);
  if (Status s = scanEvents(QDir(absDir).filePath(fromStd(protocol::kEventsFileName)), options, &out, &fold);
      !s)
    return s;
  if (out.cancelled) return out;
  fold.finish(m);
  return out;
}

}  // namespace fs::app
