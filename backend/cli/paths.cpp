#include "backend/cli/paths.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>

#ifndef FS_RESOURCES_DIR
#define FS_RESOURCES_DIR ""
#endif

namespace fs::cli {

std::string presetPath(const std::string& name) {
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    const auto installed =
        std::filesystem::path(exe).parent_path() / "../share/flamingo-train/presets" / (name + ".yaml");
    if (std::filesystem::exists(installed)) return installed.string();
  }
  return std::string(FS_RESOURCES_DIR) + "/presets/" + name + ".yaml";
}

std::filesystem::path userDataDir() {
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg)
    return std::filesystem::path(xdg) / "flamingo-studio";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::filesystem::path(home) / ".local/share/flamingo-studio";
  return std::filesystem::temp_directory_path() / "flamingo-studio";
}

std::filesystem::path timestampedRunDir(const std::string& prefix) {
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  return userDataDir() / "runs" / (prefix + "-" + stamp);
}

}  // namespace fs::cli
