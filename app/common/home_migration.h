// Moves what older builds wrote into Qt's per-application tree ("Flamingo
// Studio/flamingo-studio" under the XDG data, config and cache directories)
// into the one home of user_dirs.h, once, on the first start of a newer build,
// and says what it did. See NOTE [Moving the old home] in home_migration.cpp.
//
// Thread-safety: none; run it once at start-up, before anything opens the
// history or the settings. Ownership: plain values.
#pragma once

#include <QList>
#include <QString>
#include <QStringList>

#include "backend/protocol/status.h"

namespace fs::app {

// The old places and the new ones. current() derives both from the XDG base
// directories in the environment; tests may point them anywhere.
struct HomeLayout {
  QString oldDataDir;       // <data>/Flamingo Studio/flamingo-studio (history.sqlite)
  QString oldSettingsFile;  // <config>/Flamingo Studio/flamingo-studio.conf
  QString oldCacheDir;      // <cache>/Flamingo Studio/flamingo-studio (remote-checkpoints/)
  QString dataDir;          // userDataDir()
  QString settingsFile;     // userSettingsPath()
  QString cacheDir;         // userCacheDir()
  static HomeLayout current();
};

struct HomeMove {
  QString what;   // "the run history", "the settings", ...
  QString from;   // the old path
  QString to;     // the new path
  QString error;  // failed moves only
};

struct HomeMigrationResult {
  QList<HomeMove> moved;
  QList<HomeMove> keptBoth;  // the new one exists too: nothing moved or overwritten
  QList<HomeMove> failed;    // could not move: the old one is where it was
  QStringList removedDirs;   // old folders left empty and removed
  bool nothingHappened() const { return moved.isEmpty() && keptBoth.isEmpty() && failed.isEmpty(); }
  // What happened, for the user, naming every path; empty when nothing happened.
  QString message() const;
};

HomeMigrationResult migrateOldHome(const HomeLayout& layout);

// Moves the file or folder `from` to `to` (whose parent must exist): a rename,
// or across filesystems copyVerifyRemove(). REQUIRES: `to` does not exist.
protocol::Status moveTree(const QString& from, const QString& to);
// Copies `from` to "<to>.partial", compares every file byte for byte, renames
// the copy to `to`, then removes `from`. On any failure the copy is removed and
// `from` is untouched.
protocol::Status copyVerifyRemove(const QString& from, const QString& to);

}  // namespace fs::app
