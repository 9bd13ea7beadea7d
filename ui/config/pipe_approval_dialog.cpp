#include "ui/config/pipe_approval_dialog.h"

#include <QDialogButtonBox>
#include <QFontDatabase>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>
#include <QVBoxLayout>

#include "app/common/user_dirs.h"
#include "app/config/pipe_approval.h"

namespace fs::ui {

PipeApprovalDialog::PipeApprovalDialog(const std::vector<protocol::PipeSource>& sources, QWidget* parent)
    : QDialog(parent) {
  setWindowTitle(tr("Run these shell commands?"));
  auto* intro = new QLabel(
      tr("This config reads shards through shell commands (pipe:). It did not come from this form "
         "(a file, a preset, an imported command line or a run's config), so the commands are shown "
         "before anything runs. Each runs with /bin/sh -c, as you, on every rank. Run only what you "
         "trust; an approved command is not asked about again, a changed one is."),
      this);
  intro->setWordWrap(true);
  text_ = new QPlainTextEdit(this);
  text_->setObjectName(QStringLiteral("pipeCommands"));
  text_->setReadOnly(true);
  text_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  text_->setLineWrapMode(QPlainTextEdit::WidgetWidth);
  text_->setWordWrapMode(QTextOption::WrapAtWordBoundaryOrAnywhere);
  text_->setPlainText(QString::fromStdString(protocol::describePipeSources(sources)));
  auto* buttons = new QDialogButtonBox(this);
  run_ = buttons->addButton(tr("Run"), QDialogButtonBox::AcceptRole);
  cancel_ = buttons->addButton(QDialogButtonBox::Cancel);
  cancel_->setDefault(true);  // Enter must not approve
  cancel_->setFocus();
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(intro);
  layout->addWidget(text_, 1);
  layout->addWidget(buttons);
  resize(900, 420);
}

bool confirmPipeLaunch(QWidget* parent, const protocol::RunConfig& config, const std::set<std::string>& typed,
                       app::PipeApprovals& approvals, bool* allowPipe) {
  const std::vector<std::string> all = protocol::pipeSourceTexts(config);
  *allowPipe = false;
  if (all.empty()) return true;
  const auto ask = app::pipeSourcesToApprove(config, typed, approvals);
  if (!ask.empty()) {
    PipeApprovalDialog dialog(ask, parent);
    if (dialog.exec() != QDialog::Accepted) return false;
  }
  approvals.remember(all);
  *allowPipe = true;
  return true;
}

bool confirmPipeLaunch(QWidget* parent, const protocol::RunConfig& config, const std::set<std::string>& typed,
                       bool* allowPipe) {
  QSettings settings(app::userSettingsPath(), QSettings::IniFormat);
  app::PipeApprovals approvals(settings);
  return confirmPipeLaunch(parent, config, typed, approvals, allowPipe);
}

}  // namespace fs::ui
