#include "app/common/user_dirs.h"

#include <QStandardPaths>

// NOTE [One home]
// Qt's own per-application locations (AppDataLocation, CacheLocation, a
// QSettings built from the organization and application names) would put our
// files under "Flamingo Studio/flamingo-studio", a different tree from the runs
// in flamingo-studio/ that the engine writes. We take the *generic* XDG base
// directories instead and add our one name: Qt reads $XDG_DATA_HOME,
// $XDG_CONFIG_HOME and $XDG_CACHE_HOME with the XDG defaults, as
// backend/cli/paths.cpp does for the engine, and honours
// QStandardPaths::setTestModeEnabled (tests that open a window keep their
// files under ~/.qttest). Files written by older builds in the old tree are
// moved here once (home_migration.h).

namespace fs::app {
namespace {

QString under(QStandardPaths::StandardLocation base) {
  return QStandardPaths::writableLocation(base) + QLatin1Char('/') + QLatin1String(kHomeName);
}

}  // namespace

QString userDataDir() {
  return under(QStandardPaths::GenericDataLocation);
}

QString userConfigDir() {
  return under(QStandardPaths::GenericConfigLocation);
}

QString userCacheDir() {
  return under(QStandardPaths::GenericCacheLocation);
}

QString userRunsDir() {
  return userDataDir() + QStringLiteral("/runs");
}

QString userSettingsPath() {
  return userConfigDir() + QStringLiteral("/settings.conf");
}

}  // namespace fs::app
