// PipeApprovalDialog: before a launch, lists the config's pipe: shard
// commands that did not come from this user's form and were not approved
// before (app::pipeSourcesToApprove), in full, in a monospace read-only text
// (wrapped, never elided), with Run and Cancel; Cancel is the default button.
// confirmPipeLaunch is the one step every launch path (local, SSH, SLURM
// submit) goes through. See NOTE [Pipe approval] in
// backend/protocol/config/pipe_commands.h.
//
// Thread-safety: GUI thread only.
#pragma once

#include <QDialog>
#include <set>
#include <string>
#include <vector>

#include "backend/protocol/config/config_types.h"
#include "backend/protocol/config/pipe_commands.h"

class QPlainTextEdit;
class QPushButton;

namespace fs::app {
class PipeApprovals;
}

namespace fs::ui {

class PipeApprovalDialog : public QDialog {
  Q_OBJECT
 public:
  explicit PipeApprovalDialog(const std::vector<protocol::PipeSource>& sources, QWidget* parent = nullptr);

  QPlainTextEdit* commandText() const { return text_; }
  QPushButton* runButton() const { return run_; }
  QPushButton* cancelButton() const { return cancel_; }

 private:
  QPlainTextEdit* text_;
  QPushButton* run_;
  QPushButton* cancel_;
};

// Asks (modally) about the sources of `config` that need approval; Run
// remembers them in `approvals`. False when the user cancelled: do not launch.
// True otherwise, with *allowPipe set when the config has pipe: commands at
// all (the launch then passes --allow-pipe). Typed sources and earlier
// approvals are not asked about; they are remembered too, so the same command
// is not asked again after a reload.
bool confirmPipeLaunch(QWidget* parent, const protocol::RunConfig& config, const std::set<std::string>& typed,
                       app::PipeApprovals& approvals, bool* allowPipe);

// The same with the application's settings store (app::userSettingsPath(), where the
// rest of the GUI keeps its settings).
bool confirmPipeLaunch(QWidget* parent, const protocol::RunConfig& config, const std::set<std::string>& typed,
                       bool* allowPipe);

}  // namespace fs::ui
