#include "ui/config/approval_dialog.h"

#include <QDialogButtonBox>
#include <QFontDatabase>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace fs::ui {
namespace {

QPlainTextEdit* monospaceText(const QString& name, const QString& text, QWidget* parent) {
  auto* edit = new QPlainTextEdit(parent);
  edit->setObjectName(name);
  edit->setReadOnly(true);
  edit->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  edit->setLineWrapMode(QPlainTextEdit::WidgetWidth);
  edit->setWordWrapMode(QTextOption::WrapAtWordBoundaryOrAnywhere);
  edit->setPlainText(text);
  return edit;
}

// One item per line, as the script gets it; a control character would not show (validation refuses it).
QString sbatchLines(const std::vector<std::string>& items) {
  QString lines;
  for (const auto& item : items) {
    QString text = QString::fromStdString(item);
    for (QChar& c : text) {
      if (c.unicode() < 0x20 || c.unicode() == 0x7f) c = QChar(0xfffd);
    }
    lines +=
        (text.startsWith(QLatin1String("#SBATCH")) ? QString() : QStringLiteral("#SBATCH ")) + text + '\n';
  }
  return lines;
}

QLabel* intro(const QString& text, QWidget* parent) {
  auto* label = new QLabel(text, parent);
  label->setWordWrap(true);
  return label;
}

}  // namespace

ApprovalDialog::ApprovalDialog(const std::vector<app::ApprovalItem>& items, QWidget* parent)
    : QDialog(parent) {
  std::vector<protocol::PipeSource> pipes;
  std::vector<std::string> args;
  for (const auto& item : items) {
    if (item.kind == app::ApprovalItem::Kind::kPipe)
      pipes.push_back(item.pipe);
    else
      args.push_back(item.text);
  }
  auto* layout = new QVBoxLayout(this);
  if (!pipes.empty()) {
    layout->addWidget(
        intro(tr("This config reads shards through shell commands (pipe:). It did not come from this form "
                 "(a file, a preset, an imported command line or a run's config), so the commands are shown "
                 "before anything runs. Each runs with /bin/sh -c, as you, on every rank. Run only what you "
                 "trust; an approved command is not asked about again, a changed one is."),
              this));
    commands_ = monospaceText(QStringLiteral("pipeCommands"),
                              QString::fromStdString(protocol::describePipeSources(pipes)), this);
    layout->addWidget(commands_, 1);
  }
  if (!args.empty()) {
    layout->addWidget(intro(
        tr("This config adds sbatch options to the batch script (launch.slurm.extra_args). They did not "
           "come from this form (a file, a preset, an imported command line or a run's config), so they "
           "are shown before the job is submitted: an sbatch option can change what the job runs on the "
           "cluster. Submit only what you trust; approved options are not asked about again, changed "
           "ones are. The whole script is in the SLURM preview."),
        this));
    args_ = monospaceText(QStringLiteral("slurmArgs"), sbatchLines(args), this);
    layout->addWidget(args_, 1);
  }
  setWindowTitle(args.empty()    ? tr("Run these shell commands?")
                 : pipes.empty() ? tr("Submit with these sbatch options?")
                                 : tr("Submit with these shell commands and sbatch options?"));
  auto* buttons = new QDialogButtonBox(this);
  accept_ = buttons->addButton(args.empty() ? tr("Run") : tr("Submit"), QDialogButtonBox::AcceptRole);
  cancel_ = buttons->addButton(QDialogButtonBox::Cancel);
  cancel_->setDefault(true);  // Enter must not approve
  cancel_->setFocus();
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  layout->addWidget(buttons);
  resize(900, args.empty() || pipes.empty() ? 420 : 600);
}

bool ApprovalDialog::ask(QWidget* parent, const std::vector<app::ApprovalItem>& items) {
  if (items.empty()) return true;
  ApprovalDialog dialog(items, parent);
  return dialog.exec() == QDialog::Accepted;
}

bool confirmLaunch(QWidget* parent, app::LaunchApprovals& approvals, const protocol::RunConfig& config,
                   const std::set<std::string>& typedPipeSources, const std::set<std::string>& typedSlurmArgs,
                   app::LaunchApprovals::Scope scope, bool* allowPipe) {
  *allowPipe = false;
  const app::LaunchApprovalCheck check = approvals.check(config, typedPipeSources, typedSlurmArgs, scope);
  if (!ApprovalDialog::ask(parent, check.toAsk())) return false;
  approvals.approve(check);
  *allowPipe = check.hasPipe();
  return true;
}

}  // namespace fs::ui
