#include "app/common/home_migration.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QStandardPaths>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "app/common/user_dirs.h"

// NOTE [Moving the old home]
// Builds before issue 29 set the organization "Flamingo Studio" and the
// application "flamingo-studio", so Qt put the history in
// <data>/Flamingo Studio/flamingo-studio/history.sqlite, the settings in
// <config>/Flamingo Studio/flamingo-studio.conf and the remote-checkpoint cache
// in <cache>/Flamingo Studio/flamingo-studio/, while the runs were in
// <data>/flamingo-studio/runs. At start-up (studio/main.cpp, before the window
// opens the history) each old item moves to its new place:
// - The history moves with its SQLite side files (-wal, -shm, -journal: a WAL
//   database's last transactions may live only in -wal), side files first; if
//   one fails, those already moved go back.
// - Nothing is ever overwritten or merged: when the new item exists too, both
//   stay where they are and the message says which one is used.
// - A rename within a filesystem; across filesystems a copy that is compared
//   byte for byte before the old one is removed.
// - Old folders left empty are removed. A start with nothing old does nothing
//   and says nothing, so the check costs a few stat calls.

namespace fs::app {

using protocol::Status;
namespace stdfs = std::filesystem;

namespace {

const QString kOldTree = QStringLiteral("/Flamingo Studio");
const QStringList kHistorySideFiles = {QStringLiteral("-wal"), QStringLiteral("-shm"),
                                       QStringLiteral("-journal")};

stdfs::path native(const QString& path) {
  return stdfs::path(QFile::encodeName(path).toStdString());
}

bool exists(const QString& path) {
  std::error_code ec;
  return stdfs::exists(stdfs::symlink_status(native(path), ec));
}

// Byte-for-byte equality of two regular files.
bool sameBytes(const stdfs::path& a, const stdfs::path& b) {
  std::error_code ec;
  if (stdfs::file_size(a, ec) != stdfs::file_size(b, ec) || ec) return false;
  std::ifstream x(a, std::ios::binary), y(b, std::ios::binary);
  char bx[1 << 16], by[1 << 16];
  while (x && y) {
    x.read(bx, sizeof bx);
    y.read(by, sizeof by);
    if (x.gcount() != y.gcount() || !std::equal(bx, bx + x.gcount(), by)) return false;
  }
  return x.eof() && y.eof();
}

// Every file and folder under `from` has its twin under `to` (files with the same bytes).
Status compareTrees(const stdfs::path& from, const stdfs::path& to) {
  std::error_code ec;
  if (!stdfs::is_directory(from, ec)) {
    return sameBytes(from, to) ? Status::ok()
                               : Status::ioError(to.string() + ": the copy differs from " + from.string());
  }
  for (auto it = stdfs::recursive_directory_iterator(from, ec);
       !ec && it != stdfs::recursive_directory_iterator(); it.increment(ec)) {
    const stdfs::path twin = to / stdfs::relative(it->path(), from);
    if (it->is_symlink(ec)) {
      if (!stdfs::is_symlink(twin, ec)) return Status::ioError(twin.string() + ": the link was not copied");
    } else if (it->is_directory(ec)) {
      if (!stdfs::is_directory(twin, ec))
        return Status::ioError(twin.string() + ": the folder was not copied");
    } else if (!sameBytes(it->path(), twin)) {
      return Status::ioError(twin.string() + ": the copy differs from " + it->path().string());
    }
  }
  if (ec) return Status::ioError(from.string() + ": cannot list: " + ec.message());
  return Status::ok();
}

HomeMove move(const QString& what, const QString& from, const QString& to) {
  HomeMove m{what, from, to, QString()};
  if (!QDir().mkpath(QFileInfo(to).absolutePath())) {
    m.error = QStringLiteral("cannot create the folder %1").arg(QFileInfo(to).absolutePath());
  } else if (Status s = moveTree(from, to); !s) {
    m.error = QString::fromStdString(s.message());
  }
  return m;
}

void record(HomeMigrationResult& result, HomeMove m) {
  (m.error.isEmpty() ? result.moved : result.failed).append(std::move(m));
}

// The history and its side files, as one item.
void moveHistory(const QString& oldDir, const QString& newDir, HomeMigrationResult& result) {
  const QString what = QStringLiteral("the run history");
  const QString from = oldDir + QStringLiteral("/history.sqlite");
  const QString to = newDir + QStringLiteral("/history.sqlite");
  QStringList parts;  // suffixes present in the old place, side files first
  for (const QString& side : kHistorySideFiles)
    if (exists(from + side)) parts << side;
  if (exists(from)) parts << QString();
  if (parts.isEmpty()) return;
  const QStringList all = QStringList(kHistorySideFiles) << QString();
  for (const QString& suffix : all) {
    if (exists(to + suffix)) {
      result.keptBoth.append({what, from, to, QString()});
      return;
    }
  }
  QStringList done;
  for (const QString& suffix : parts) {
    HomeMove m = move(what, from + suffix, to + suffix);
    if (!m.error.isEmpty()) {
      for (const QString& back : done) (void)moveTree(to + back, from + back);  // keep the set together
      result.failed.append({what, from, to, m.error});
      return;
    }
    done << suffix;
  }
  result.moved.append({what, from, to, QString()});
}

// Every entry of `oldDir` (but the history) to the same name in `newDir`.
void moveEntries(const QString& what, const QString& oldDir, const QString& newDir,
                 HomeMigrationResult& result) {
  const QDir dir(oldDir);
  if (!dir.exists()) return;
  for (const QString& name :
       dir.entryList(QDir::AllEntries | QDir::Hidden | QDir::System | QDir::NoDotAndDotDot, QDir::Name)) {
    if (name.startsWith(QStringLiteral("history.sqlite"))) continue;
    const QString from = dir.filePath(name);
    const QString to = newDir + QLatin1Char('/') + name;
    const QString label = QStringLiteral("%1 (%2)").arg(what, name);
    if (exists(to)) {
      result.keptBoth.append({label, from, to, QString()});
    } else {
      record(result, move(label, from, to));
    }
  }
}

void removeIfEmpty(const QString& path, HomeMigrationResult& result) {
  const QDir dir(path);
  if (dir.exists() && dir.isEmpty(QDir::AllEntries | QDir::Hidden | QDir::System | QDir::NoDotAndDotDot) &&
      QDir().rmdir(path)) {
    result.removedDirs << path;
  }
}

QString parentOf(const QString& path) {
  return QFileInfo(path).absolutePath();
}

}  // namespace

HomeLayout HomeLayout::current() {
  const auto base = [](QStandardPaths::StandardLocation l) { return QStandardPaths::writableLocation(l); };
  HomeLayout h;
  h.oldDataDir = base(QStandardPaths::GenericDataLocation) + kOldTree + QStringLiteral("/flamingo-studio");
  h.oldSettingsFile =
      base(QStandardPaths::GenericConfigLocation) + kOldTree + QStringLiteral("/flamingo-studio.conf");
  h.oldCacheDir = base(QStandardPaths::GenericCacheLocation) + kOldTree + QStringLiteral("/flamingo-studio");
  h.dataDir = userDataDir();
  h.settingsFile = userSettingsPath();
  h.cacheDir = userCacheDir();
  return h;
}

HomeMigrationResult migrateOldHome(const HomeLayout& layout) {
  HomeMigrationResult result;
  if (QDir(layout.oldDataDir).exists()) {
    moveHistory(layout.oldDataDir, layout.dataDir, result);
    moveEntries(QStringLiteral("data"), layout.oldDataDir, layout.dataDir, result);
  }
  if (exists(layout.oldSettingsFile)) {
    const QString what = QStringLiteral("the settings");
    if (exists(layout.settingsFile)) {
      result.keptBoth.append({what, layout.oldSettingsFile, layout.settingsFile, QString()});
    } else {
      record(result, move(what, layout.oldSettingsFile, layout.settingsFile));
    }
  }
  moveEntries(QStringLiteral("the cache"), layout.oldCacheDir, layout.cacheDir, result);
  for (const QString& dir : {layout.oldDataDir, parentOf(layout.oldDataDir), parentOf(layout.oldSettingsFile),
                             layout.oldCacheDir, parentOf(layout.oldCacheDir)}) {
    removeIfEmpty(dir, result);
  }
  return result;
}

QString HomeMigrationResult::message() const {
  QStringList parts;
  for (const HomeMove& m : moved)
    parts << QStringLiteral("Moved %1 from %2 to %3.").arg(m.what, m.from, m.to);
  for (const HomeMove& m : keptBoth) {
    parts << QStringLiteral(
                 "Found %1 both in %2 and in %3: using %3; nothing was overwritten, %2 is left as it "
                 "is (merge or delete it yourself).")
                 .arg(m.what, m.from, m.to);
  }
  for (const HomeMove& m : failed) {
    parts << QStringLiteral("Could not move %1 from %2 to %3 (%4); it stays where it was.")
                 .arg(m.what, m.from, m.to, m.error);
  }
  return parts.join(QLatin1Char(' '));
}

Status moveTree(const QString& from, const QString& to) {
  if (exists(to)) return Status::invalidArgument(to.toStdString() + ": exists already; not overwritten");
  std::error_code ec;
  stdfs::rename(native(from), native(to), ec);
  if (!ec) return Status::ok();
  if (ec != std::errc::cross_device_link)
    return Status::ioError(from.toStdString() + ": cannot move to " + to.toStdString() + ": " + ec.message());
  return copyVerifyRemove(from, to);
}

Status copyVerifyRemove(const QString& from, const QString& to) {
  const stdfs::path src = native(from), dst = native(to);
  const stdfs::path partial = native(to + QStringLiteral(".partial"));
  std::error_code ec;
  if (exists(to)) return Status::invalidArgument(to.toStdString() + ": exists already; not overwritten");
  stdfs::remove_all(partial, ec);  // a copy an interrupted start left behind
  const auto fail = [&](const std::string& why) {
    std::error_code ignored;
    stdfs::remove_all(partial, ignored);
    return Status::ioError(from.toStdString() + ": cannot copy to " + to.toStdString() + ": " + why);
  };
  stdfs::copy(src, partial, stdfs::copy_options::recursive | stdfs::copy_options::copy_symlinks, ec);
  if (ec) return fail(ec.message());
  if (Status same = compareTrees(src, partial); !same) return fail(same.message());
  stdfs::rename(partial, dst, ec);
  if (ec) return fail(ec.message());
  stdfs::remove_all(src, ec);
  if (ec) {
    return Status::ioError(to.toStdString() + ": copied and checked, but the old " + from.toStdString() +
                           " could not be removed: " + ec.message());
  }
  return Status::ok();
}

}  // namespace fs::app
