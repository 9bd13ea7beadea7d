#include "app/plan/plan_worker.h"

#include <QDir>
#include <QFile>

#include "app/plan/plan_json.h"
#include "backend/protocol/config/config_yaml.h"

namespace fs::app {
namespace {

// Failing runs print their reason on stderr; keep the message to what a
// person reads (the usage text after it is noise in a view).
QString stderrText(const QByteArray& bytes) {
  QString text = QString::fromLocal8Bit(bytes).trimmed();
  const qsizetype usage = text.indexOf(QLatin1String("\nusage: "));
  if (usage > 0) text.truncate(usage);
  return text.trimmed();
}

}  // namespace

PlanWorker::PlanWorker(QObject* parent) : QObject(parent) {}

PlanWorker::~PlanWorker() {
  stopCurrent();
}

void PlanWorker::plan(quint64 ticket, const PlanRequest& request, const EngineSearch& search) {
  if (shutDown_) return;
  if (stopCurrent()) emit cancelled(ticket_);
  ticket_ = ticket;
  fit_ = request.fit.has_value();
  if (ticket <= cancelUpTo_.load()) {
    emit cancelled(ticket);
    return;
  }

  const EngineLocation engine = locateEngine(search);
  if (!engine.found()) return fail(PlanErrorKind::kEngineNotFound, engine.error);
  enginePath_ = engine.path;

  QString configFile = request.configFile;
  std::optional<protocol::RunConfig> config = request.config;
  if (config) {
    tempDir_ = std::make_unique<QTemporaryDir>(QDir::temp().filePath(QStringLiteral("flamingo-plan-XXXXXX")));
    if (!tempDir_->isValid()) {
      return fail(PlanErrorKind::kConfig,
                  QStringLiteral("cannot create a temporary directory for the config: %1")
                      .arg(tempDir_->errorString()));
    }
    configFile = tempDir_->filePath(QStringLiteral("config.yaml"));
    if (protocol::Status s = protocol::saveConfigFile(*config, QFile::encodeName(configFile).toStdString());
        !s) {
      return fail(PlanErrorKind::kConfig,
                  QStringLiteral("cannot write %1: %2").arg(configFile, QString::fromStdString(s.message())));
    }
  } else if (request.runChoice) {
    const auto load = protocol::loadConfigFile(QFile::encodeName(configFile).toStdString());
    if (!load.ok()) {
      return fail(
          PlanErrorKind::kConfig,
          QStringLiteral("cannot read %1:\n%2")
              .arg(configFile, QString::fromStdString(protocol::formatProblems(load.problems)).trimmed()));
    }
    config = load.config;
  }

  process_ = new QProcess(this);
  process_->setStandardInputFile(QProcess::nullDevice());
  connect(process_, &QProcess::finished, this, &PlanWorker::onFinished);
  connect(process_, &QProcess::errorOccurred, this, &PlanWorker::onError);
  connect(process_, &QProcess::started, this,
          [this, ticket] { emit processStarted(ticket, process_->processId()); });
  process_->start(enginePath_, planArguments(request, configFile, config));
}

void PlanWorker::cancel(quint64 ticket) {
  if (ticket != ticket_ || !stopCurrent()) return;
  emit cancelled(ticket);
}

void PlanWorker::shutdown() {
  shutDown_ = true;
  stopCurrent();
}

bool PlanWorker::stopCurrent() {
  if (!process_) return false;
  disconnect(process_, nullptr, this, nullptr);  // its exit is ours, not a result
  if (process_->state() != QProcess::NotRunning) {
    process_->kill();
    process_->waitForFinished(-1);  // SIGKILL cannot be ignored: reaps at once
  }
  delete process_;
  process_ = nullptr;
  tempDir_.reset();
  return true;
}

void PlanWorker::onFinished(int exitCode, QProcess::ExitStatus status) {
  const QByteArray out = process_->readAllStandardOutput();
  const QString err = stderrText(process_->readAllStandardError());
  process_->deleteLater();
  process_ = nullptr;
  tempDir_.reset();
  if (status == QProcess::CrashExit) {
    return fail(PlanErrorKind::kCrash,
                QStringLiteral("%1 plan crashed%2")
                    .arg(enginePath_, err.isEmpty() ? QString() : QStringLiteral(": ") + err));
  }
  if (fit_) {
    // Exit 1 with the fit on stdout: nothing fits; its misfits are the answer.
    FitParse parse = parseFitJson(out);
    if (exitCode != 0 && (exitCode != 1 || !parse.ok() || !parse.fit.ranked.isEmpty()))
      return fail(PlanErrorKind::kExit,
                  err.isEmpty()
                      ? QStringLiteral("%1 plan --fit exited with code %2").arg(enginePath_).arg(exitCode)
                      : err);
    if (!parse.ok()) return fail(PlanErrorKind::kBadOutput, parse.error);
    if (exitCode != 0) parse.fit.refusal = err;
    emit fitted(ticket_, parse.fit);
    return;
  }
  if (exitCode != 0) {
    return fail(
        PlanErrorKind::kExit,
        err.isEmpty() ? QStringLiteral("%1 plan exited with code %2").arg(enginePath_).arg(exitCode) : err);
  }
  PlanParse parse = parsePlanJson(out);
  if (!parse.ok()) return fail(PlanErrorKind::kBadOutput, parse.error);
  emit planned(ticket_, parse.plan);
}

void PlanWorker::onError(QProcess::ProcessError error) {
  // Only a failed start has no finished() after it; the rest end there.
  if (error != QProcess::FailedToStart || !process_) return;
  const QString why = process_->errorString();
  process_->deleteLater();
  process_ = nullptr;
  tempDir_.reset();
  fail(PlanErrorKind::kStart, QStringLiteral("cannot start %1: %2").arg(enginePath_, why));
}

void PlanWorker::fail(PlanErrorKind kind, const QString& message) {
  emit failed(ticket_, PlanError{kind, message});
}

}  // namespace fs::app
