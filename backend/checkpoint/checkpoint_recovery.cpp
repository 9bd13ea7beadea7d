// Leftovers of interrupted checkpoint writes: NOTE [Replacing a sharded checkpoint] in checkpoint_recovery.h.
#include "backend/checkpoint/checkpoint_recovery.h"

#include <algorithm>
#include <optional>

#include "backend/checkpoint/checkpoint_sharded.h"
#include "backend/protocol/wire/run_dir.h"

namespace fs::checkpoint {

using protocol::Status;
namespace stdfs = std::filesystem;

namespace {

constexpr std::string_view kPartial = ".partial", kOld = ".old", kPruned = ".pruned";

stdfs::path hiddenName(const stdfs::path& checkpoint, std::string_view suffix) {
  return protocol::parentDir(checkpoint) / ("." + checkpoint.filename().string() + std::string(suffix));
}

// The checkpoint name in ".<name><suffix>", when it is one.
std::optional<std::string> leftoverOf(const std::string& name, std::string_view suffix) {
  if (name.size() <= 1 + suffix.size() || name[0] != '.' || !name.ends_with(suffix)) return std::nullopt;
  std::string base = name.substr(1, name.size() - 1 - suffix.size());
  if (!protocol::parseCheckpointFileName(base)) return std::nullopt;
  return base;
}

bool present(const stdfs::path& p) {
  std::error_code ec;
  return stdfs::exists(stdfs::symlink_status(p, ec));
}

}  // namespace

stdfs::path shardedPartialName(const stdfs::path& checkpoint) {
  return hiddenName(checkpoint, kPartial);
}
stdfs::path shardedOldName(const stdfs::path& checkpoint) {
  return hiddenName(checkpoint, kOld);
}
stdfs::path prunedName(const stdfs::path& checkpoint) {
  return hiddenName(checkpoint, kPruned);
}

Status removeCheckpoint(const stdfs::path& checkpoint, protocol::WriteEnv& env) {
  std::error_code ec;
  const auto parent = protocol::parentDir(checkpoint);
  if (!stdfs::is_directory(checkpoint, ec)) {
    if (Status s = env.remove(checkpoint); !s) return s;
    return env.syncDir(parent);
  }
  const auto pruned = prunedName(checkpoint);
  if (Status s = protocol::removeTree(env, pruned); !s) return s;
  if (Status s = env.rename(checkpoint, pruned); !s) return s;
  if (Status s = env.syncDir(parent); !s) return s;
  if (Status s = protocol::removeTree(env, pruned); !s) return s;
  return env.syncDir(parent);
}

Status recoverCheckpointLeftovers(const stdfs::path& runDir, protocol::WriteEnv& env,
                                  std::vector<std::string>* notes) {
  std::vector<stdfs::path> entries;
  std::error_code ec;
  for (stdfs::directory_iterator it(runDir, ec), end; !ec && it != end; it.increment(ec))
    entries.push_back(it->path());
  if (ec) {
    if (!present(runDir)) return Status::ok();
    return Status::ioError("cannot list " + runDir.string() + ": " + ec.message());
  }
  std::sort(entries.begin(), entries.end());
  auto note = [&](std::string line) {
    if (notes) notes->push_back(std::move(line));
  };
  bool changed = false;
  // Partial directories first: a complete one may be the checkpoint an `.old` was moved aside for.
  for (const auto& p : entries) {
    const auto base = leftoverOf(p.filename().string(), kPartial);
    if (!base) continue;
    const auto target = runDir / *base;
    if (!present(target) && shardedCheckpointIteration(p)) {
      if (Status s = env.rename(p, target); !s) return s;
      note("completed an interrupted checkpoint replacement: moved " + p.string() + " to " + target.string());
    } else {
      if (Status s = protocol::removeTree(env, p); !s) return s;
      note("removed " + p.string() + ": an interrupted checkpoint write");
    }
    changed = true;
  }
  for (const auto& p : entries) {
    const std::string name = p.filename().string();
    if (const auto base = leftoverOf(name, kOld)) {
      const auto target = runDir / *base;
      if (present(target)) {
        if (Status s = protocol::removeTree(env, p); !s) return s;
        note("removed " + p.string() + ": the checkpoint " + target.filename().string() + " replaced it");
      } else {
        if (Status s = env.rename(p, target); !s) return s;
        note("restored " + target.string() + " from " + p.string() + ": its replacement was interrupted");
      }
      changed = true;
    } else if (leftoverOf(name, kPruned)) {
      if (Status s = protocol::removeTree(env, p); !s) return s;
      note("removed " + p.string() + ": an interrupted prune");
      changed = true;
    } else if (protocol::isTempFileName(name) && name.find("checkpoint_") != std::string::npos) {
      if (Status s = env.remove(p); !s) return s;
      note("removed " + p.string() + ": the temporary file of an interrupted checkpoint write");
      changed = true;
    }
  }
  return changed ? env.syncDir(runDir) : Status::ok();
}

}  // namespace fs::checkpoint
