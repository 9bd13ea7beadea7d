// The GUI's one home: where flamingo-studio keeps what it writes under the
// user's home directory, all under one `flamingo-studio` name in the XDG base
// directories, the same tree `flamingo-train` puts its runs in
// (backend/cli/paths.h):
//
//   $XDG_DATA_HOME/flamingo-studio     (~/.local/share/flamingo-studio)  history.sqlite, runs/
//   $XDG_CONFIG_HOME/flamingo-studio   (~/.config/flamingo-studio)       settings.conf
//   $XDG_CACHE_HOME/flamingo-studio    (~/.cache/flamingo-studio)        remote-checkpoints/
//
// Every place that writes under the home asks here (see NOTE [One home]).
//
// Thread-safety: pure functions of the environment (read on each call).
#pragma once

#include <QString>

namespace fs::app {

// The folder name under each XDG base directory.
inline constexpr char kHomeName[] = "flamingo-studio";

// <XDG_DATA_HOME or ~/.local/share>/flamingo-studio.
QString userDataDir();
// <XDG_CONFIG_HOME or ~/.config>/flamingo-studio.
QString userConfigDir();
// <XDG_CACHE_HOME or ~/.cache>/flamingo-studio.
QString userCacheDir();
// <user data dir>/runs: runs nobody gave a root (the demo's, as `flamingo-train demo`'s).
QString userRunsDir();
// <user config dir>/settings.conf: the GUI's QSettings file (INI format).
QString userSettingsPath();

}  // namespace fs::app
