// The one home (user_dirs.h) and moving the old one into it (home_migration.h),
// on a temporary HOME with temporary XDG_* variables: a fresh home moves nothing
// and says nothing; an old history moves and the history store reads it in its
// new place; when both exist nothing is overwritten and the message says so;
// settings and caches move too; a copy across filesystems is checked.
#include "app/common/home_migration.h"

#include <QDir>
#include <QFile>
#include <QSettings>
#include <QTemporaryDir>
#include <QtTest>

#include "app/common/user_dirs.h"
#include "app/history/history_store.h"

namespace fs::app {
namespace {

RunRecord record(const QString& id) {
  RunRecord r;
  r.runId = id;
  r.name = id;
  r.runDir = QStringLiteral("/runs/") + id;
  r.status = QStringLiteral("finished");
  r.startedMs = 1000;
  r.endedMs = 2000;
  return r;
}

// Writes a history with one run at `path`.
bool writeHistory(const QString& path, const QString& runId) {
  HistoryStore store;
  return store.open(path).isOk() && store.upsert(record(runId)).isOk();
}

bool hasRun(const QString& path, const QString& runId) {
  HistoryStore store;
  return store.open(path).isOk() && store.find(runId).isOk();
}

void writeFile(const QString& path, const QByteArray& bytes) {
  QVERIFY(QDir().mkpath(QFileInfo(path).absolutePath()));
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  QCOMPARE(f.write(bytes), bytes.size());
}

QByteArray readFile(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

}  // namespace

class HomeMigrationTest : public QObject {
  Q_OBJECT

  std::unique_ptr<QTemporaryDir> tmp_;
  QString home_;

  QString oldHistory() const {
    return home_ + QStringLiteral("/.local/share/Flamingo Studio/flamingo-studio/history.sqlite");
  }

 private slots:
  // A fresh HOME with the XDG variables unset: the XDG defaults under it.
  void init() {
    tmp_ = std::make_unique<QTemporaryDir>();
    QVERIFY(tmp_->isValid());
    home_ = tmp_->filePath(QStringLiteral("home"));
    QVERIFY(QDir().mkpath(home_));
    qputenv("HOME", QFile::encodeName(home_));
    for (const char* v : {"XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"}) qunsetenv(v);
  }

  void defaultsAreUnderHome() {
    QCOMPARE(userDataDir(), home_ + QStringLiteral("/.local/share/flamingo-studio"));
    QCOMPARE(userConfigDir(), home_ + QStringLiteral("/.config/flamingo-studio"));
    QCOMPARE(userCacheDir(), home_ + QStringLiteral("/.cache/flamingo-studio"));
    QCOMPARE(userRunsDir(), home_ + QStringLiteral("/.local/share/flamingo-studio/runs"));
    QCOMPARE(userSettingsPath(), home_ + QStringLiteral("/.config/flamingo-studio/settings.conf"));
    QCOMPARE(defaultHistoryPath(), home_ + QStringLiteral("/.local/share/flamingo-studio/history.sqlite"));
  }

  void xdgVariablesAreHonoured() {
    const QString data = tmp_->filePath(QStringLiteral("xdg-data"));
    const QString config = tmp_->filePath(QStringLiteral("xdg-config"));
    const QString cache = tmp_->filePath(QStringLiteral("xdg-cache"));
    qputenv("XDG_DATA_HOME", QFile::encodeName(data));
    qputenv("XDG_CONFIG_HOME", QFile::encodeName(config));
    qputenv("XDG_CACHE_HOME", QFile::encodeName(cache));
    QCOMPARE(userDataDir(), data + QStringLiteral("/flamingo-studio"));
    QCOMPARE(userConfigDir(), config + QStringLiteral("/flamingo-studio"));
    QCOMPARE(userCacheDir(), cache + QStringLiteral("/flamingo-studio"));
    QCOMPARE(defaultHistoryPath(), data + QStringLiteral("/flamingo-studio/history.sqlite"));
    // The old tree is looked for under the same variables.
    const HomeLayout layout = HomeLayout::current();
    QCOMPARE(layout.oldDataDir, data + QStringLiteral("/Flamingo Studio/flamingo-studio"));
    QCOMPARE(layout.oldSettingsFile, config + QStringLiteral("/Flamingo Studio/flamingo-studio.conf"));
    QCOMPARE(layout.oldCacheDir, cache + QStringLiteral("/Flamingo Studio/flamingo-studio"));
  }

  void freshHomeMovesNothingAndSaysNothing() {
    const HomeMigrationResult r = migrateOldHome(HomeLayout::current());
    QVERIFY(r.nothingHappened());
    QVERIFY(r.message().isEmpty());
    QVERIFY(r.removedDirs.isEmpty());
    QVERIFY(!QFileInfo::exists(userDataDir()));  // nothing created either
    QVERIFY(!QFileInfo::exists(userConfigDir()));
  }

  void oldHistoryMovesAndReadsInItsNewPlace() {
    QVERIFY(writeHistory(oldHistory(), QStringLiteral("old-run")));
    const HomeMigrationResult r = migrateOldHome(HomeLayout::current());
    QCOMPARE(r.moved.size(), 1);
    QVERIFY(r.keptBoth.isEmpty());
    QVERIFY(r.failed.isEmpty());
    const QString message = r.message();
    QVERIFY2(message.contains(oldHistory()), qPrintable(message));
    QVERIFY2(message.contains(defaultHistoryPath()), qPrintable(message));
    QVERIFY(message.startsWith(QStringLiteral("Moved the run history")));
    QVERIFY(!QFileInfo::exists(oldHistory()));
    QVERIFY(hasRun(defaultHistoryPath(), QStringLiteral("old-run")));
    // The old folders, empty now, are gone.
    QVERIFY(!QFileInfo::exists(home_ + QStringLiteral("/.local/share/Flamingo Studio")));
    QVERIFY(r.removedDirs.contains(home_ + QStringLiteral("/.local/share/Flamingo Studio")));
    // The next start finds nothing old.
    QVERIFY(migrateOldHome(HomeLayout::current()).nothingHappened());
  }

  void bothHistoriesAreKeptAndTheMessageSaysSo() {
    QVERIFY(writeHistory(oldHistory(), QStringLiteral("old-run")));
    QVERIFY(writeHistory(defaultHistoryPath(), QStringLiteral("new-run")));
    const QByteArray oldBytes = readFile(oldHistory()), newBytes = readFile(defaultHistoryPath());
    const HomeMigrationResult r = migrateOldHome(HomeLayout::current());
    QVERIFY(r.moved.isEmpty());
    QCOMPARE(r.keptBoth.size(), 1);
    const QString message = r.message();
    QVERIFY2(message.contains(QStringLiteral("both")), qPrintable(message));
    QVERIFY2(message.contains(QStringLiteral("nothing was overwritten")), qPrintable(message));
    QVERIFY(message.contains(oldHistory()) && message.contains(defaultHistoryPath()));
    QCOMPARE(readFile(oldHistory()), oldBytes);  // neither touched
    QCOMPARE(readFile(defaultHistoryPath()), newBytes);
    QVERIFY(hasRun(defaultHistoryPath(), QStringLiteral("new-run")));
    QVERIFY(!hasRun(defaultHistoryPath(), QStringLiteral("old-run")));
    QVERIFY(hasRun(oldHistory(), QStringLiteral("old-run")));
    QVERIFY(QFileInfo::exists(home_ + QStringLiteral("/.local/share/Flamingo Studio")));  // not empty: kept
  }

  void settingsAndCacheMoveToo() {
    const QString oldSettings = home_ + QStringLiteral("/.config/Flamingo Studio/flamingo-studio.conf");
    {
      QSettings old(oldSettings, QSettings::IniFormat);
      old.setValue(QStringLiteral("remote_follow/host"), QStringLiteral("node1"));
    }
    const QString oldCache = home_ + QStringLiteral("/.cache/Flamingo Studio/flamingo-studio");
    writeFile(oldCache + QStringLiteral("/remote-checkpoints/a/index.json"), "{}");
    const HomeMigrationResult r = migrateOldHome(HomeLayout::current());
    QCOMPARE(r.moved.size(), 2);
    QVERIFY(r.message().contains(userSettingsPath()));
    QCOMPARE(QSettings(userSettingsPath(), QSettings::IniFormat).value(QStringLiteral("remote_follow/host")),
             QVariant(QStringLiteral("node1")));
    QCOMPARE(readFile(userCacheDir() + QStringLiteral("/remote-checkpoints/a/index.json")), QByteArray("{}"));
    QVERIFY(!QFileInfo::exists(home_ + QStringLiteral("/.config/Flamingo Studio")));
    QVERIFY(!QFileInfo::exists(home_ + QStringLiteral("/.cache/Flamingo Studio")));
  }

  // The path taken across filesystems: copy, compare, then remove the old one.
  void copyVerifyRemoveMovesATree() {
    const QString from = tmp_->filePath(QStringLiteral("from"));
    const QString to = tmp_->filePath(QStringLiteral("to"));
    QByteArray big(300000, '\0');
    for (int i = 0; i < big.size(); ++i) big[i] = char(i * 7);
    writeFile(from + QStringLiteral("/a.bin"), big);
    writeFile(from + QStringLiteral("/sub/b.txt"), "b");
    QVERIFY(copyVerifyRemove(from, to).isOk());
    QVERIFY(!QFileInfo::exists(from));
    QVERIFY(!QFileInfo::exists(to + QStringLiteral(".partial")));
    QCOMPARE(readFile(to + QStringLiteral("/a.bin")), big);
    QCOMPARE(readFile(to + QStringLiteral("/sub/b.txt")), QByteArray("b"));
    // Never over an existing one.
    writeFile(from + QStringLiteral("/c"), "c");
    QVERIFY(!copyVerifyRemove(from, to).isOk());
    QVERIFY(!moveTree(from, to).isOk());
    QCOMPARE(readFile(from + QStringLiteral("/c")), QByteArray("c"));
  }
};

}  // namespace fs::app

QTEST_GUILESS_MAIN(fs::app::HomeMigrationTest)
#include "home_migration_test.moc"
