#include "app/launch/run_preparation.h"

#include <QDir>
#include <QFile>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "backend/protocol/config/config_override.h"
#include "backend/protocol/config/config_yaml.h"
#include "backend/protocol/config/validate.h"
#include "backend/protocol/wire/run_dir.h"

namespace fs::app {
namespace {

namespace stdfs = std::filesystem;

stdfs::path toPath(const QString& p) {
  return stdfs::path(QFile::encodeName(p).toStdString());
}

QString fromStd(const std::string& s) {
  return QString::fromStdString(s);
}

// Only the errors: warnings (e.g. "lr never decays" on a short run) are the
// user's call, and the engine prints them again.
QString errorText(const std::vector<protocol::Problem>& problems) {
  std::vector<protocol::Problem> errors;
  for (const auto& p : problems) {
    if (p.isError()) errors.push_back(p);
  }
  return fromStd(protocol::formatProblems(errors)).trimmed();
}

}  // namespace

QString sanitizeRunName(const QString& name) {
  QString out;
  out.reserve(name.size());
  for (const QChar c : name) {
    const bool plain = (c >= QLatin1Char('a') && c <= QLatin1Char('z')) ||
                       (c >= QLatin1Char('A') && c <= QLatin1Char('Z')) ||
                       (c >= QLatin1Char('0') && c <= QLatin1Char('9')) || c == QLatin1Char('.') ||
                       c == QLatin1Char('_') || c == QLatin1Char('-');
    out += plain ? c : QLatin1Char('_');
  }
  if (out.startsWith(QLatin1Char('.'))) out[0] = QLatin1Char('_');
  return out.isEmpty() ? QStringLiteral("run") : out;
}

CreatedDir createUniqueRunDirectory(const QString& root, const QString& base) {
  std::error_code ec;
  const stdfs::path rootPath = toPath(root);
  stdfs::create_directories(rootPath, ec);
  if (ec) return {{}, QStringLiteral("cannot create run root %1: %2").arg(root, fromStd(ec.message()))};
  for (int n = 1; n <= 1000; ++n) {
    const QString name = n == 1 ? base : QStringLiteral("%1-%2").arg(base).arg(n);
    const stdfs::path dir = rootPath / toPath(name);
    // create_directory is mkdir: false without an error when the name is taken.
    if (!stdfs::create_directory(dir, ec)) {
      if (ec) {
        return {{},
                QStringLiteral("cannot create run directory %1: %2")
                    .arg(QFile::decodeName(dir.c_str()), fromStd(ec.message()))};
      }
      continue;
    }
    if (protocol::Status s = protocol::RunDir(dir).create(); !s) return {{}, fromStd(s.message())};
    return {QFile::decodeName(dir.c_str()), {}};
  }
  return {{},
          QStringLiteral("cannot create a run directory named %1 under %2: 1000 names with that base are "
                         "taken; choose another run name")
              .arg(base, root)};
}

ResolvedConfig resolveLaunchConfig(const LaunchRequest& request, bool absoluteRoot) {
  ResolvedConfig out;
  protocol::RunConfig config = request.config;
  std::vector<std::string> overrides;
  for (const QString& o : request.overrides) overrides.push_back(o.toStdString());
  if (auto problems = protocol::applyOverrides(&config, overrides); protocol::hasErrors(problems)) {
    out.error = QStringLiteral("override rejected:\n%1").arg(errorText(problems));
    return out;
  }
  const QString name = request.name.isEmpty() ? fromStd(config.name) : request.name;
  config.name = name.toStdString();
  if (!request.runRoot.isEmpty()) {
    config.run_root = (absoluteRoot ? QDir(request.runRoot).absolutePath() : request.runRoot).toStdString();
  }
  if (auto problems = protocol::validateConfig(config, protocol::FileChecks::kModelFiles);
      protocol::hasErrors(problems)) {
    out.error = QStringLiteral("the run config is not valid:\n%1").arg(errorText(problems));
    return out;
  }
  out.config = std::move(config);
  return out;
}

PreparedRun prepareRun(const LaunchRequest& request, const EngineSearch& search, const QDateTime& now) {
  PreparedRun out;
  const EngineLocation engine = locateEngine(search);
  if (!engine.found()) {
    out.error = engine.error;
    return out;
  }
  out.enginePath = engine.path;
  if (request.runRoot.isEmpty()) {
    out.error = QStringLiteral("no run root given: set the folder new run directories are created in");
    return out;
  }

  auto resolved = resolveLaunchConfig(request);
  if (!resolved.isOk()) {
    out.error = resolved.error;
    return out;
  }
  const protocol::RunConfig& config = resolved.config;
  const QString name = fromStd(config.name);
  const QString root = fromStd(config.run_root);
  if (config.launch.kind != "local") {
    // The form's launch target picks the launcher; a config that says otherwise never runs here.
    out.error = QStringLiteral(
                    "launch.kind is '%1': the local launcher starts only launch.kind=local runs; choose the "
                    "matching launch target (SSH nodes, SLURM cluster), or set launch.kind=local")
                    .arg(fromStd(config.launch.kind));
    return out;
  }

  const QString base =
      sanitizeRunName(name) + QLatin1Char('-') + now.toString(QStringLiteral("yyyyMMdd-HHmmss"));
  const CreatedDir dir = createUniqueRunDirectory(root, base);
  if (!dir.error.isEmpty()) {
    out.error = dir.error;
    return out;
  }
  out.runDir = dir.path;
  out.configFile = QDir(dir.path).absoluteFilePath(
      QString::fromLatin1(protocol::kConfigFileName.data(), protocol::kConfigFileName.size()));
  protocol::DumpOptions dump;
  dump.comments = true;  // people read this file; the engine ignores comments
  if (protocol::Status s =
          protocol::saveConfigFile(config, toPath(out.configFile).string(), dump, protocol::kConfigFileMode);
      !s) {
    out.error = QStringLiteral("cannot write %1: %2").arg(out.configFile, fromStd(s.message()));
    std::error_code ec;
    stdfs::remove_all(toPath(out.runDir), ec);  // ours, just made, and useless without its config
    out.runDir.clear();
    out.configFile.clear();
  }
  return out;
}

}  // namespace fs::app
