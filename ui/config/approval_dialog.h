// ApprovalDialog: before a launch or a SLURM submit, shows the items that
// app::LaunchApprovals::check() said to ask about, and returns the user's
// answer; it stores nothing (the caller passes a yes to
// LaunchApprovals::approve). pipe: sources are shown in full (field, source,
// commands; wrapped, never elided), launch.slurm.extra_args items as the
// #SBATCH lines they become, each in a monospace read-only text. Cancel is
// the default button. See NOTE [Pipe approval] in
// backend/protocol/config/pipe_commands.h and NOTE [SLURM extra args] in
// app/launch/slurm/slurm_script.h.
//
// Thread-safety: GUI thread only.
#pragma once

#include <QDialog>
#include <set>
#include <string>
#include <vector>

#include "app/config/launch_approval.h"

class QPlainTextEdit;
class QPushButton;

namespace fs::ui {

class ApprovalDialog : public QDialog {
  Q_OBJECT
 public:
  explicit ApprovalDialog(const std::vector<app::ApprovalItem>& items, QWidget* parent = nullptr);

  // Asks (modally) when `items` is not empty: true when there was nothing
  // to ask or the user chose Run / Submit.
  static bool ask(QWidget* parent, const std::vector<app::ApprovalItem>& items);

  // The pipe: commands / the #SBATCH lines; null when there are none of that kind.
  QPlainTextEdit* commandText() const { return commands_; }
  QPlainTextEdit* argsText() const { return args_; }
  // "Submit" when SLURM items are shown, else "Run".
  QPushButton* acceptButton() const { return accept_; }
  QPushButton* cancelButton() const { return cancel_; }

 private:
  QPlainTextEdit* commands_ = nullptr;
  QPlainTextEdit* args_ = nullptr;
  QPushButton* accept_;
  QPushButton* cancel_;
};

// The step every launch path (local, SSH, SLURM submit) goes through: one
// approvals.check(), the dialog when something must be asked, and on yes
// approvals.approve(). False: cancelled, do not launch. True otherwise, with
// *allowPipe set when the config has pipe: sources (the launch then passes
// --allow-pipe); *allowPipe is false after a cancel.
bool confirmLaunch(QWidget* parent, app::LaunchApprovals& approvals, const protocol::RunConfig& config,
                   const std::set<std::string>& typedPipeSources, const std::set<std::string>& typedSlurmArgs,
                   app::LaunchApprovals::Scope scope, bool* allowPipe);

}  // namespace fs::ui
