#include "ui/config/slurm_args_dialog.h"

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

SlurmArgsDialog::SlurmArgsDialog(const std::vector<std::string>& items, QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("Submit with these sbatch options?"));
  auto* intro = new QLabel(
      tr("This config adds sbatch options to the batch script (launch.slurm.extra_args). They did not "
         "come from this form (a file, a preset, an imported command line or a run's config), so they "
         "are shown before the job is submitted: an sbatch option can change what the job runs on the "
         "cluster. Submit only what you trust; approved options are not asked about again, changed "
         "ones are. The whole script is in the SLURM preview."),
      this);
  intro->setWordWrap(true);
  QString lines;
  for (const auto& item : items) {
    QString text = QString::fromStdString(item);
    // One item per line, as the script gets it; a control character would not show (validation refuses it).
    for (QChar& c : text) {
      if (c.unicode() < 0x20 || c.unicode() == 0x7f) c = QChar(0xfffd);
    }
    lines +=
        (text.startsWith(QLatin1String("#SBATCH")) ? QString() : QStringLiteral("#SBATCH ")) + text + '\n';
  }
  text_ = new QPlainTextEdit(this);
  text_->setObjectName(QStringLiteral("slurmArgs"));
  text_->setReadOnly(true);
  text_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  text_->setLineWrapMode(QPlainTextEdit::WidgetWidth);
  text_->setWordWrapMode(QTextOption::WrapAtWordBoundaryOrAnywhere);
  text_->setPlainText(lines);
  auto* buttons = new QDialogButtonBox(this);
  submit_ = buttons->addButton(tr("Submit"), QDialogButtonBox::AcceptRole);
  cancel_ = buttons->addButton(QDialogButtonBox::Cancel);
  cancel_->setDefault(true);  // Enter must not approve
  cancel_->setFocus();
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(intro);
  layout->addWidget(text_, 1);
  layout->addWidget(buttons);
  resize(800, 320);
}

bool confirmSlurmArgs(QWidget* parent, const protocol::RunConfig& config, const std::set<std::string>& typed,
                      app::PipeApprovals& approvals) {
  const auto& all = config.launch.slurm.extra_args;
  if (all.empty()) return true;
  const auto ask = app::slurmArgsToApprove(config, typed, approvals);
  if (!ask.empty()) {
    SlurmArgsDialog dialog(ask, parent);
    if (dialog.exec() != QDialog::Accepted) return false;
  }
  approvals.remember(all);
  return true;
}

bool confirmSlurmArgs(QWidget* parent, const protocol::RunConfig& config,
                      const std::set<std::string>& typed) {
  QSettings settings(app::userSettingsPath(), QSettings::IniFormat);
  app::PipeApprovals approvals(settings, app::PipeApprovals::kSlurmArgsKey);
  return confirmSlurmArgs(parent, config, typed, approvals);
}

}  // namespace fs::ui
