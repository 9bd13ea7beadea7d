// SlurmArgsDialog: before a SLURM submit, lists the launch.slurm.extra_args
// items that did not come from this user's form and were not approved before
// (app::slurmArgsToApprove), as the #SBATCH lines they become, with Submit and
// Cancel; Cancel is the default button. confirmSlurmArgs is the step the
// SLURM submit goes through. See NOTE [SLURM extra args] in
// app/launch/slurm/slurm_script.h.
//
// Thread-safety: GUI thread only.
#pragma once

#include <QDialog>
#include <set>
#include <string>
#include <vector>

#include "backend/protocol/config/config_types.h"

class QPlainTextEdit;
class QPushButton;

namespace fs::app {
class PipeApprovals;
}

namespace fs::ui {

class SlurmArgsDialog : public QDialog {
  Q_OBJECT
 public:
  explicit SlurmArgsDialog(const std::vector<std::string>& items, QWidget* parent = nullptr);

  QPlainTextEdit* argsText() const { return text_; }
  QPushButton* submitButton() const { return submit_; }
  QPushButton* cancelButton() const { return cancel_; }

 private:
  QPlainTextEdit* text_;
  QPushButton* submit_;
  QPushButton* cancel_;
};

// Asks (modally) about the items of `config` that need approval; Submit
// remembers every item in `approvals` (PipeApprovals::kSlurmArgsKey). False
// when the user cancelled: do not submit. True when there was nothing to ask
// or the user chose Submit.
bool confirmSlurmArgs(QWidget* parent, const protocol::RunConfig& config, const std::set<std::string>& typed,
                      app::PipeApprovals& approvals);

// The same with the application's settings store (app::userSettingsPath()).
bool confirmSlurmArgs(QWidget* parent, const protocol::RunConfig& config, const std::set<std::string>& typed);

}  // namespace fs::ui
