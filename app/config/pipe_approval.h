// The GUI's side of NOTE [Pipe approval] (backend/protocol/config/pipe_commands.h):
// which pipe: shard sources of a config must be shown and approved before a
// launch, and the approvals remembered across sessions.
//
// A source needs approval unless the user typed it into this document's form
// (ConfigDocument::typedPipeSources) or approved exactly that text before.
// Approvals are kept per exact source text in QSettings as hashes, never as
// the text (NOTE [Approval hashes] in pipe_approval.cpp): group
// "pipe_approvals", key "sha256". A launch that passes the check gets
// LaunchRequest::allowPipe.
//
// launch.slurm.extra_args items follow the same rule (NOTE [SLURM extra args]
// in app/launch/slurm/slurm_script.h): ConfigDocument::typedSlurmArgs, approvals
// under "slurm_arg_approvals/sha256" (PipeApprovals::kSlurmArgsKey).
//
// Thread-safety: GUI thread only (QSettings is used from one thread).
#pragma once

#include <QSettings>
#include <set>
#include <string>
#include <vector>

#include "backend/protocol/config/config_types.h"
#include "backend/protocol/config/pipe_commands.h"

namespace fs::app {

class PipeApprovals {
 public:
  // Reads and writes through `settings`, which must outlive this object.
  // Plain-text approvals of older builds found there are hashed and deleted.
  explicit PipeApprovals(QSettings& settings) : PipeApprovals(settings, kPipeKey) {}
  // The same store under another key (kSlurmArgsKey: launch.slurm.extra_args items).
  PipeApprovals(QSettings& settings, QString key);

  // "<group>/sha256": the hashes; the group's old key of plain texts is migrated.
  static inline const QString kPipeKey = QStringLiteral("pipe_approvals/sha256");
  static inline const QString kSlurmArgsKey = QStringLiteral("slurm_arg_approvals/sha256");

  // What is stored for `text`: "sha256v1:" and the hex SHA-256 of its bytes.
  static QString hashOf(const std::string& text);

  bool isApproved(const std::string& source) const;
  // Adds the texts' hashes to the remembered set and writes it (QSettings::sync).
  void remember(const std::vector<std::string>& sources);
  // How many texts are remembered.
  std::size_t size() const;

 private:
  void migratePlainText();

  QSettings& settings_;
  QString key_;
};

// The sources of `config` to show before a launch: one entry per distinct
// source text (the first field naming it), leaving out those in `typed` and
// those approved before. Empty: launch without asking.
std::vector<protocol::PipeSource> pipeSourcesToApprove(const protocol::RunConfig& config,
                                                       const std::set<std::string>& typed,
                                                       const PipeApprovals& approvals);

// The launch.slurm.extra_args items to show before a SLURM submit (NOTE [SLURM
// extra args] in app/launch/slurm/slurm_script.h): distinct items, in order,
// leaving out those in `typed` and those `approvals` (kSlurmArgsKey) holds.
std::vector<std::string> slurmArgsToApprove(const protocol::RunConfig& config,
                                            const std::set<std::string>& typed,
                                            const PipeApprovals& approvals);

}  // namespace fs::app
