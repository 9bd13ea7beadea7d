// The local launcher without an engine run: where flamingo-train is looked
// for, run directory names, config problems reported before anything starts,
// and output split into lines.
#include "app/launch/local_launcher.h"

#include <sys/stat.h>

#include <QDir>
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "app/launch/engine_locator.h"
#include "app/launch/output_lines.h"
#include "app/launch/run_preparation.h"
#include "backend/launch/free_port.h"
#include "launch_test_util.h"

namespace fs::app {
namespace {

// An executable file named flamingo-train in `dir`. Only located, never run.
QString placeEngine(const QString& dir) {
  QDir().mkpath(dir);
  const QString path = QDir(dir).filePath(QLatin1String(kEngineExecutableName));
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly)) qFatal("cannot write %s", qPrintable(path));
  f.write("#!/bin/sh\nexit 3\n");
  f.close();
  f.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner);
  return path;
}

// An executable flamingo-train in `dir` that runs `body` (sh), in the run directory.
QString placeScript(const QString& dir, const QByteArray& body) {
  const QString path = placeEngine(dir);
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) qFatal("cannot write %s", qPrintable(path));
  f.write("#!/bin/sh\n" + body);
  f.close();
  return path;
}

QString readText(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

LaunchRequest tinyRequest(const QString& root) {
  LaunchRequest r;
  r.config = test::tinyConfig();
  r.runRoot = root;
  return r;
}

}  // namespace

class LocalLauncherTest : public QObject {
  Q_OBJECT

 private slots:
  void init() {
    tmp_ = std::make_unique<QTemporaryDir>();
    QVERIFY(tmp_->isValid());
  }

  void outputLinesJoinChunksAndSplitLongLines() {
    OutputLines lines(8);
    QCOMPARE(lines.feed("ab"), QStringList());
    QCOMPARE(lines.feed("c\r\nd\n\n"), (QStringList{"abc", "d", ""}));
    // "é" split across chunks decodes once whole.
    QCOMPARE(lines.feed("\xc3"), QStringList());
    QCOMPARE(lines.feed("\xa9\n"), QStringList{QStringLiteral("\u00e9")});
    QCOMPARE(lines.feed("tail"), QStringList());
    QCOMPARE(lines.flush(), QStringList{"tail"});
    QCOMPARE(lines.flush(), QStringList());
    // Longer than 8 bytes: cut there once and marked; the rest dropped up to its newline.
    const QString cut = QStringLiteral("01234567 [truncated: line longer than 8 bytes]");
    QCOMPARE(lines.feed("0123456789abcdefXY"), QStringList{cut});
    QCOMPARE(lines.feed("more of it"), QStringList());
    QCOMPARE(lines.feed("\nnext\n"), QStringList{"next"});
  }

  // Issue 42 (Low): a process that writes megabytes without a newline holds at most
  // the limit, and the line after it is read intact.
  void outputLinesBoundAMultiMegabyteLine() {
    OutputLines lines;  // 64 KiB
    QStringList got;
    const QByteArray mib(1 << 20, 'x');
    for (int i = 0; i < 8; ++i) {
      got << lines.feed(mib);
      QVERIFY(lines.bufferedBytes() <= 64 * 1024);
    }
    QCOMPARE(got.size(), 1);
    QCOMPARE(got[0], QString(64 * 1024, QLatin1Char('x')) + " [truncated: line longer than 65536 bytes]");
    QCOMPARE(lines.feed("\nafter\n"), QStringList{"after"});
    QCOMPARE(lines.bufferedBytes(), 0);
  }

  void sanitizedRunNames() {
    QCOMPARE(sanitizeRunName(QStringLiteral("tiny")), QStringLiteral("tiny"));
    QCOMPARE(sanitizeRunName(QStringLiteral("my run/../x")), QStringLiteral("my_run_.._x"));
    QCOMPARE(sanitizeRunName(QStringLiteral(".hidden")), QStringLiteral("_hidden"));
    QCOMPARE(sanitizeRunName(QString()), QStringLiteral("run"));
  }

  void runDirectoriesAreNeverReused() {
    const QString root = tmp_->filePath(QStringLiteral("runs"));
    const CreatedDir a = createUniqueRunDirectory(root, QStringLiteral("tiny-20260101-000000"));
    const CreatedDir b = createUniqueRunDirectory(root, QStringLiteral("tiny-20260101-000000"));
    QVERIFY2(a.error.isEmpty(), qPrintable(a.error));
    QVERIFY2(b.error.isEmpty(), qPrintable(b.error));
    QCOMPARE(QFileInfo(a.path).fileName(), QStringLiteral("tiny-20260101-000000"));
    QCOMPARE(QFileInfo(b.path).fileName(), QStringLiteral("tiny-20260101-000000-2"));
    for (const QString& sub :
         {QStringLiteral("control"), QStringLiteral("control/done"), QStringLiteral("logs")}) {
      QVERIFY2(QFileInfo(QDir(b.path).filePath(sub)).isDir(), qPrintable(sub));
    }
  }

  void runRootThatIsAFileIsNamed() {
    const QString file = tmp_->filePath(QStringLiteral("not-a-dir"));
    QFile f(file);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.close();
    const CreatedDir d = createUniqueRunDirectory(file, QStringLiteral("x"));
    QVERIFY(d.path.isEmpty());
    QVERIFY2(d.error.contains(file), qPrintable(d.error));
  }

  void engineNextToTheAppComesFirst() {
    const QString app = placeEngine(tmp_->filePath(QStringLiteral("app")));
    const QString other = placeEngine(tmp_->filePath(QStringLiteral("other")));
    EngineLocation found = locateEngine({tmp_->filePath(QStringLiteral("app")), other, {}});
    QCOMPARE(found.path, app);
    found = locateEngine({tmp_->filePath(QStringLiteral("empty")), other, {}});
    QCOMPARE(found.path, other);
    found = locateEngine({{}, {}, QStringLiteral("/nonexistent:") + tmp_->filePath(QStringLiteral("other"))});
    QCOMPARE(found.path, other);
  }

  void aSetPathThatIsMissingIsNotReplacedByPath() {
    placeEngine(tmp_->filePath(QStringLiteral("onpath")));
    const QString missing = tmp_->filePath(QStringLiteral("nowhere/flamingo-train"));
    const EngineLocation found = locateEngine({{}, missing, tmp_->filePath(QStringLiteral("onpath"))});
    QVERIFY(!found.found());
    QVERIFY2(found.error.contains(missing) && found.error.contains(QStringLiteral("does not exist")),
             qPrintable(found.error));
  }

  void missingEngineGivesAClearError() {
    const QString appDir = tmp_->filePath(QStringLiteral("app"));
    const QString pathDir = tmp_->filePath(QStringLiteral("bin"));
    QDir().mkpath(appDir);
    QDir().mkpath(pathDir);
    LocalLauncher launcher({appDir, {}, pathDir});
    QSignalSpy failed(&launcher, &Launcher::failed);
    QSignalSpy started(&launcher, &Launcher::started);
    const QString root = tmp_->filePath(QStringLiteral("runs"));
    launcher.launch(tinyRequest(root));
    QCOMPARE(launcher.state(), LaunchState::kPreparing);
    QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 30000);
    const QString message = failed.at(0).at(0).toString();
    QVERIFY2(message.startsWith(QStringLiteral("flamingo-train not found")), qPrintable(message));
    QVERIFY2(message.contains(appDir + QStringLiteral("/flamingo-train")), qPrintable(message));
    QVERIFY2(message.contains(QStringLiteral("path setting (not set)")), qPrintable(message));
    QVERIFY2(message.contains(QStringLiteral("in PATH (") + pathDir + QLatin1Char(')')), qPrintable(message));
    QCOMPARE(launcher.state(), LaunchState::kFailed);
    QCOMPARE(started.count(), 0);
    QVERIFY2(!QFileInfo::exists(root), "no run directory for a launch that cannot start");
  }

  void badOverrideIsNamedBeforeAnythingIsCreated() {
    LocalLauncher launcher({{}, placeEngine(tmp_->filePath(QStringLiteral("bin"))), {}});
    QSignalSpy failed(&launcher, &Launcher::failed);
    LaunchRequest request = tinyRequest(tmp_->filePath(QStringLiteral("runs")));
    request.overrides = {QStringLiteral("optim.epochs=0")};
    launcher.launch(request);
    QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 30000);
    const QString message = failed.at(0).at(0).toString();
    QVERIFY2(message.contains(QStringLiteral("optim.epochs")), qPrintable(message));
    QVERIFY(!QFileInfo::exists(request.runRoot));
  }

  void invalidConfigIsNamed() {
    LocalLauncher launcher({{}, placeEngine(tmp_->filePath(QStringLiteral("bin"))), {}});
    QSignalSpy failed(&launcher, &Launcher::failed);
    LaunchRequest request = tinyRequest(tmp_->filePath(QStringLiteral("runs")));
    request.config.data.datasets.at(0).batch_size = 0;
    launcher.launch(request);
    QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 30000);
    const QString message = failed.at(0).at(0).toString();
    QVERIFY2(message.contains(QStringLiteral("data.datasets[0].batch_size")), qPrintable(message));
  }

  // The local launcher never starts a config meant for another launcher (it once ran ssh configs locally).
  void onlyLocalRunsAreStarted() {
    const QString engine = placeEngine(tmp_->filePath(QStringLiteral("bin")));
    const QList<QStringList> others = {
        {QStringLiteral("launch.kind=ssh"), QStringLiteral("launch.hosts=[node-a]")},
        {QStringLiteral("launch.kind=slurm")},
        {QStringLiteral("launch.kind=external")}};
    for (const QStringList& overrides : others) {
      LaunchRequest request = tinyRequest(tmp_->filePath(QStringLiteral("runs")));
      request.overrides = overrides;
      const PreparedRun run = prepareRun(request, {{}, engine, {}}, QDateTime::currentDateTime());
      QVERIFY2(!run.isOk(), qPrintable(overrides.join(' ')));
      QVERIFY2(run.error.contains(QStringLiteral("the local launcher starts only launch.kind=local runs")),
               qPrintable(run.error));
      QVERIFY2(!QFileInfo::exists(request.runRoot), "no run directory for a launch that cannot start");
    }
  }

  void severalRanksGoThroughTheNodeAgent() {
    LaunchRequest r;
    r.config = test::tinyConfig();
    QCOMPARE(ranksPerNode(r), 1);
    r.overrides = {QStringLiteral("launch.nproc_per_node=3")};
    QCOMPARE(ranksPerNode(r), 3);
    QCOMPARE(engineArguments(1, 4000, QStringLiteral("/r/config.yaml"), QStringLiteral("/r")),
             (QStringList{"train", "--config", "/r/config.yaml", "--run-dir", "/r"}));
    QCOMPARE(engineArguments(3, 4000, QStringLiteral("/r/config.yaml"), QStringLiteral("/r")),
             (QStringList{"launch", "--nproc-per-node", "3", "--master-port", "4000", "--run-dir", "/r", "--",
                          "train", "--config", "/r/config.yaml"}));
    // Approved pipe: commands: the rank command carries --allow-pipe (the node agent passes it on).
    QCOMPARE(engineArguments(1, 4000, QStringLiteral("/r/config.yaml"), QStringLiteral("/r"), true),
             (QStringList{"train", "--config", "/r/config.yaml", "--allow-pipe", "--run-dir", "/r"}));
    QCOMPARE(engineArguments(2, 4000, QStringLiteral("/r/config.yaml"), QStringLiteral("/r"), true).mid(8),
             (QStringList{"train", "--config", "/r/config.yaml", "--allow-pipe"}));
    // launch.max_restarts: always the node agent (one rank too), with --max-restarts.
    QCOMPARE(engineArguments(1, 4000, QStringLiteral("/r/config.yaml"), QStringLiteral("/r"), false, 2),
             (QStringList{"launch", "--nproc-per-node", "1", "--master-port", "4000", "--run-dir", "/r",
                          "--max-restarts", "2", "--", "train", "--config", "/r/config.yaml"}));
    QCOMPARE(
        engineArguments(2, 4000, QStringLiteral("/r/config.yaml"), QStringLiteral("/r"), false, 1).mid(7, 2),
        (QStringList{"--max-restarts", "1"}));
    const int port = launch::freeLoopbackPort();
    QVERIFY(port > 0 && port < 65536);
  }

  // NOTE [Launch environment]: launch.env goes on top of this process's environment.
  void engineEnvironmentIsOursWithLaunchEnvOnTop() {
    LaunchRequest request = tinyRequest(tmp_->path());
    request.config.launch.env = {{"FS_A", "from config"}, {"FS_B", "b"}};
    request.overrides = {QStringLiteral("launch.env.FS_B=from --set")};
    QProcessEnvironment base;
    base.insert(QStringLiteral("FS_A"), QStringLiteral("ours"));
    base.insert(QStringLiteral("KEPT"), QStringLiteral("kept"));
    const QProcessEnvironment env = engineEnvironment(request, base);
    QCOMPARE(env.value(QStringLiteral("FS_A")), QStringLiteral("from config"));
    QCOMPARE(env.value(QStringLiteral("FS_B")), QStringLiteral("from --set"));
    QCOMPARE(env.value(QStringLiteral("KEPT")), QStringLiteral("kept"));
    QCOMPARE(env.keys().size(), qsizetype{3});
  }

  // The engine process itself (the rank, or the node agent that passes it on) gets launch.env,
  // every value verbatim: the engine here is a script that writes what it received.
  void theEngineProcessGetsLaunchEnv() {
    const QString canary = tmp_->filePath(QStringLiteral("canary"));
    const std::string hostile = "it's a \"v\" $(touch " + canary.toStdString() + ") `touch " +
                                canary.toStdString() + "` ; | & * ~ \\ end ";
    const QString engine = placeScript(tmp_->filePath(QStringLiteral("bin")),
                                       "printf '%s|%s|%s|%s\\n' \"$1\" \"$FS_PLAIN\" \"$FS_HOSTILE\" "
                                       "\"${FS_EMPTY-unset}\" > env.txt\n");
    for (const int ranks : {1, 2}) {
      LocalLauncher launcher({{}, engine, {}});
      QSignalSpy finished(&launcher, &Launcher::finished);
      QSignalSpy failed(&launcher, &Launcher::failed);
      LaunchRequest request = tinyRequest(tmp_->filePath(QStringLiteral("runs")));
      request.config.launch.env = {{"FS_PLAIN", "Haswell"}, {"FS_HOSTILE", hostile}, {"FS_EMPTY", ""}};
      request.overrides = {QStringLiteral("launch.nproc_per_node=%1").arg(ranks)};
      launcher.launch(request);
      QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 1 || failed.count() == 1, 30000);
      QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.at(0).at(0).toString()));
      QCOMPARE(finished.at(0).at(0).toInt(), 0);
      const QString seen = readText(QDir(launcher.runDir()).filePath(QStringLiteral("env.txt")));
      QCOMPARE(seen, QStringLiteral("%1|Haswell|%2|\n")
                         .arg(ranks == 1 ? QStringLiteral("train") : QStringLiteral("launch"),
                              QString::fromStdString(hostile)));
      // The launcher's log lists launch.env, each NAME=VALUE quoted for a shell.
      const QString log = readText(QDir(launcher.runDir()).filePath(QStringLiteral("logs/launcher.log")));
      QVERIFY2(log.contains(QStringLiteral("[launcher] launch.env: FS_EMPTY= 'FS_HOSTILE=it'\\''s a")),
               qPrintable(log));
      QVERIFY2(log.contains(QStringLiteral(" FS_PLAIN=Haswell\n")), qPrintable(log));
    }
    QVERIFY2(!QFileInfo::exists(canary), "a launch.env value was executed");
  }

  void launchEnvTheLauncherSetsIsRefusedBeforeAnythingStarts() {
    LocalLauncher launcher({{}, placeEngine(tmp_->filePath(QStringLiteral("bin"))), {}});
    QSignalSpy failed(&launcher, &Launcher::failed);
    LaunchRequest request = tinyRequest(tmp_->filePath(QStringLiteral("runs")));
    request.overrides = {QStringLiteral("launch.env.WORLD_SIZE=8")};
    launcher.launch(request);
    QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 30000);
    const QString message = failed.at(0).at(0).toString();
    QVERIFY2(message.contains(QStringLiteral("launch.env.WORLD_SIZE")), qPrintable(message));
    QVERIFY2(message.contains(QStringLiteral("set by the launcher")), qPrintable(message));
    QVERIFY(!QFileInfo::exists(request.runRoot));
  }

  void preparedRunHoldsTheResolvedConfig() {
    const QString engine = placeEngine(tmp_->filePath(QStringLiteral("bin")));
    LaunchRequest request = tinyRequest(tmp_->filePath(QStringLiteral("runs")));
    request.name = QStringLiteral("my run");
    request.overrides = {QStringLiteral("optim.epochs=3"),
                         QStringLiteral("data.datasets.laion.samples_per_epoch=32"),
                         QStringLiteral("data.datasets[1].samples_per_epoch=16")};
    const QDateTime when(QDate(2026, 1, 2), QTime(3, 4, 5));
    const PreparedRun run = prepareRun(request, {{}, engine, {}}, when);
    QVERIFY2(run.isOk(), qPrintable(run.error));
    QCOMPARE(run.enginePath, engine);
    QCOMPARE(run.runDir, QDir(request.runRoot).filePath(QStringLiteral("my_run-20260102-030405")));
    const auto load = protocol::loadConfigFile(test::fsPath(run.configFile).string());
    QVERIFY2(load.ok(), protocol::formatProblems(load.problems).c_str());
    QCOMPARE(load.config.optim.epochs, int64_t{3});
    QCOMPARE(load.config.data.datasets.at(0).samples_per_epoch, int64_t{32});
    QCOMPARE(load.config.data.datasets.at(1).samples_per_epoch, int64_t{16});
    QCOMPARE(QString::fromStdString(load.config.name), QStringLiteral("my run"));
    QCOMPARE(QString::fromStdString(load.config.run_root), QDir(request.runRoot).absolutePath());
    // Its pipe: commands may carry credentials: the owner's only (issue 42, Low b).
    struct stat st {};
    QCOMPARE(::stat(QFile::encodeName(run.configFile).constData(), &st), 0);
    QCOMPARE(st.st_mode & 0777, 0600u);
    // The same second again: a new directory, never the first one.
    const PreparedRun again = prepareRun(request, {{}, engine, {}}, when);
    QVERIFY2(again.isOk(), qPrintable(again.error));
    QCOMPARE(again.runDir, run.runDir + QStringLiteral("-2"));
  }

 private:
  std::unique_ptr<QTemporaryDir> tmp_;
};

}  // namespace fs::app

QTEST_GUILESS_MAIN(fs::app::LocalLauncherTest)
#include "local_launcher_test.moc"
