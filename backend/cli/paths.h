// Where the CLI finds its resources and puts runs nobody named.
#pragma once

#include <filesystem>
#include <string>

namespace fs::cli {

// resources/presets/<name>.yaml: installed next to the binary
// (../share/flamingo-train/presets, where `cmake --install --component engine` puts them) or, in a
// build tree, the source tree's.
std::string presetPath(const std::string& name);

// $XDG_DATA_HOME/flamingo-studio, else ~/.local/share/flamingo-studio.
std::filesystem::path userDataDir();

// <user data dir>/runs/<prefix>-<local time YYYYmmdd-HHMMSS>.
std::filesystem::path timestampedRunDir(const std::string& prefix);

}  // namespace fs::cli
