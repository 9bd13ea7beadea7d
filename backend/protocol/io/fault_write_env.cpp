// FaultWriteEnv: NOTE [Cutting a write sequence] in fault_write_env.h.
#include "backend/protocol/io/fault_write_env.h"

#include <csignal>
#include <cstdlib>

namespace fs::protocol {

namespace stdfs = std::filesystem;

namespace {

// A file from the base env whose operations are counted under its path.
class FaultFile : public WritableFile {
 public:
  FaultFile(FaultWriteEnv& env, stdfs::path path, std::unique_ptr<WritableFile> base)
      : env_(env), path_(std::move(path)), base_(std::move(base)) {}
  Status append(std::string_view data) override {
    if (Status s = env_.check("append", path_); !s) return s;
    return base_->append(data);
  }
  Status sync() override {
    if (Status s = env_.check("sync", path_); !s) return s;
    return base_->sync();
  }
  Status truncate(std::uint64_t size) override {
    if (Status s = env_.check("truncate", path_); !s) return s;
    return base_->truncate(size);
  }
  Status close() override {
    if (Status s = env_.check("close", path_); !s) {
      (void)base_->close();  // the descriptor goes either way, as with close(2)
      return s;
    }
    return base_->close();
  }

 private:
  FaultWriteEnv& env_;
  stdfs::path path_;
  std::unique_ptr<WritableFile> base_;
};

}  // namespace

FaultWriteEnv::FaultWriteEnv(WriteEnv& base, Options options) : base_(base), options_(std::move(options)) {}

std::int64_t FaultWriteEnv::count() const {
  std::lock_guard lock(mu_);
  return count_;
}

std::vector<std::string> FaultWriteEnv::trace() const {
  std::lock_guard lock(mu_);
  return trace_;
}

bool FaultWriteEnv::failed() const {
  std::lock_guard lock(mu_);
  return failed_;
}

Status FaultWriteEnv::check(const char* op, const stdfs::path& path, const stdfs::path& to) {
  if (options_.watch && !options_.watch(path)) return Status::ok();
  std::unique_lock lock(mu_);
  ++count_;
  trace_.push_back(std::string(op) + " " + path.string() + (to.empty() ? "" : " -> " + to.string()));
  if (count_ != options_.at) return Status::ok();
  if (options_.action == Action::kCrash) {
    lock.unlock();
    if (options_.crash) options_.crash();
    std::raise(SIGKILL);
    std::abort();  // not reached
  }
  failed_ = true;
  return Status::ioError(std::string("injected fault: ") + op + " " + path.string() + " failed (operation " +
                         std::to_string(count_) + ")");
}

StatusOr<std::unique_ptr<WritableFile>> FaultWriteEnv::createFile(const stdfs::path& path, unsigned mode,
                                                                  bool* exists) {
  if (Status s = check("create", path); !s) return s;
  auto f = base_.createFile(path, mode, exists);
  if (!f) return f.status();
  return std::unique_ptr<WritableFile>(new FaultFile(*this, path, std::move(f).value()));
}

StatusOr<std::unique_ptr<WritableFile>> FaultWriteEnv::openAppend(const stdfs::path& path, bool* created) {
  if (Status s = check("open", path); !s) return s;
  auto f = base_.openAppend(path, created);
  if (!f) return f.status();
  return std::unique_ptr<WritableFile>(new FaultFile(*this, path, std::move(f).value()));
}

Status FaultWriteEnv::rename(const stdfs::path& from, const stdfs::path& to) {
  if (Status s = check("rename", from, to); !s) return s;
  return base_.rename(from, to);
}

StatusOr<bool> FaultWriteEnv::renameNoReplace(const stdfs::path& from, const stdfs::path& to) {
  if (Status s = check("rename", from, to); !s) return s;
  return base_.renameNoReplace(from, to);
}

Status FaultWriteEnv::remove(const stdfs::path& path) {
  if (Status s = check("remove", path); !s) return s;
  return base_.remove(path);
}

Status FaultWriteEnv::createDir(const stdfs::path& path) {
  if (Status s = check("mkdir", path); !s) return s;
  return base_.createDir(path);
}

Status FaultWriteEnv::syncDir(const stdfs::path& dir) {
  if (Status s = check("syncdir", dir); !s) return s;
  return base_.syncDir(dir);
}

}  // namespace fs::protocol
