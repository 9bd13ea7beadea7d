// LaunchApprovals: the one call before a launch or a SLURM submit that says
// what of a config may run commands the user did not type (NOTE [Pipe
// approval] in backend/protocol/config/pipe_commands.h, NOTE [SLURM extra
// args] in app/launch/slurm/slurm_script.h), and the store of the user's answers.
//
// check() scans the config once and returns every source needing approval,
// each with what it is, where it is and whether to ask (neither typed into
// this document's form nor approved before); approve() remembers the checked
// sources (hashed, NOTE [Approval hashes] in pipe_approval.cpp), never
// re-reading the config. The dialog (ui/config/approval_dialog.h) only shows
// the items to ask about and returns the answer.
//
// Ownership: owns the QSettings it opens (the default constructor), or
// borrows one that must outlive it. Thread-safety: GUI thread only.
#pragma once

#include <QSettings>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "app/config/pipe_approval.h"
#include "backend/protocol/config/config_types.h"
#include "backend/protocol/config/pipe_commands.h"

namespace fs::app {

struct ApprovalItem {
  enum class Kind { kPipe, kSlurmArg };
  Kind kind = Kind::kPipe;
  std::string text;           // what approval is keyed on: a pipe: source as written, an extra_args item
  std::string field;          // where: "data.datasets[1].val_shards", "launch.slurm.extra_args[2]"
  protocol::PipeSource pipe;  // kPipe: the source with its commands, for the dialog
  bool ask = false;           // neither typed into the form nor approved before
};

struct LaunchApprovalCheck {
  // One per distinct text of a kind (the first field naming it): pipe sources, then SLURM items.
  std::vector<ApprovalItem> items;

  // The config runs pipe: commands (the launch passes --allow-pipe once approved).
  bool hasPipe() const;
  // Something must be shown to the user before the launch.
  bool needsAnswer() const;
  std::vector<ApprovalItem> toAsk() const;
};

class LaunchApprovals {
 public:
  // The application's settings store (app::userSettingsPath()).
  LaunchApprovals();
  // `settings` must outlive this object (tests).
  explicit LaunchApprovals(QSettings& settings);
  ~LaunchApprovals();

  enum class Scope { kLaunch, kSlurmSubmit };
  // kLaunch: the pipe: sources; kSlurmSubmit: those and launch.slurm.extra_args.
  LaunchApprovalCheck check(const protocol::RunConfig& config, const std::set<std::string>& typedPipeSources,
                            const std::set<std::string>& typedSlurmArgs, Scope scope) const;
  // Remembers every item of `check` (asked or not), so a typed text is not
  // asked again after a reload. Call only once the user said yes (or nothing needed asking).
  void approve(const LaunchApprovalCheck& check);

 private:
  std::unique_ptr<QSettings> owned_;
  PipeApprovals pipe_;
  PipeApprovals slurm_;
};

}  // namespace fs::app
