// A small real file system for tests of a full disk: a size-limited tmpfs
// mounted in a private mount namespace, so nothing outside the test process
// and its children ever sees it, and it goes away with them.
//
// NOTE [A private tmpfs]
// mount() first moves the calling thread into a mount namespace of its own
// (unshare(CLONE_NEWNS)) and makes every mount in it private, so the tmpfs
// does not propagate back to the host's namespace; processes forked from that
// thread afterwards (flamingo-train) inherit it. Both need CAP_SYS_ADMIN
// (root in a container that allows it). A test calls mount() on its main
// thread, forks from that thread, and reads the files from that thread.
// resize() remounts with another size: smaller down to what is used, or
// bigger, as freeing space would.
//
// Thread-safety: one thread (see the note). Ownership: unmounts (lazily) on destruction.
#pragma once

#include <sched.h>
#include <sys/mount.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>

namespace fs::trainer::test {

class PrivateTmpfs {
 public:
  PrivateTmpfs() = default;
  ~PrivateTmpfs() {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  PrivateTmpfs(const PrivateTmpfs&) = delete;
  PrivateTmpfs& operator=(const PrivateTmpfs&) = delete;

  // Mounts a tmpfs of `bytes` (rounded up to pages) on `dir`, which is created. Empty on
  // success, else why it could not (for FS_FIXTURE_UNAVAILABLE).
  std::string mount(const std::filesystem::path& dir, std::uint64_t bytes) {
    if (::unshare(CLONE_NEWNS) != 0) return "unshare(CLONE_NEWNS): " + error() + " (needs CAP_SYS_ADMIN)";
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
      return "making / private in the new mount namespace: " + error();
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return "cannot create " + dir.string() + ": " + ec.message();
    const std::string options = "size=" + std::to_string(bytes) + ",mode=0755";
    if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, options.c_str()) != 0)
      return "mounting a tmpfs (" + options + ") on " + dir.string() + ": " + error();
    dir_ = dir;
    mounted_ = true;
    return {};
  }

  // Remounts with `bytes`; empty on success, else why not.
  std::string resize(std::uint64_t bytes) {
    const std::string options = "size=" + std::to_string(bytes);
    if (::mount(nullptr, dir_.c_str(), nullptr, MS_REMOUNT, options.c_str()) != 0)
      return "remounting " + dir_.string() + " with " + options + ": " + error();
    return {};
  }

  // Bytes in use (whole pages), from statvfs.
  std::uint64_t usedBytes() const {
    struct statvfs st {};
    if (::statvfs(dir_.c_str(), &st) != 0) return 0;
    return static_cast<std::uint64_t>(st.f_blocks - st.f_bfree) * st.f_frsize;
  }

 private:
  static std::string error() { return std::strerror(errno); }
  std::filesystem::path dir_;
  bool mounted_ = false;
};

}  // namespace fs::trainer::test
