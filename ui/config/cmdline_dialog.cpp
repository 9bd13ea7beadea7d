#include "ui/config/cmdline_dialog.h"

#include <QDialogButtonBox>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QVBoxLayout>

#include "app/config/config_document.h"
#include "ui/config/problem_label.h"

namespace fs::ui {
namespace {

QString problemLines(const std::vector<protocol::Problem>& problems) {
  QStringList lines;
  for (const auto& p : problems) {
    const bool error = p.severity == protocol::Problem::Severity::kError;
    lines << QStringLiteral("<span style=\"color:%1\">%2</span> %3: %4")
                 .arg(QLatin1String(error ? kErrorColor : kWarningColor),
                      error ? QObject::tr("error") : QObject::tr("warning"),
                      QString::fromStdString(p.path).toHtmlEscaped(),
                      QString::fromStdString(p.message).toHtmlEscaped());
  }
  return lines.join(QStringLiteral("<br>"));
}

QString words(const std::vector<std::string>& list) {
  QStringList out;
  for (const auto& w : list) out << QString::fromStdString(w).toHtmlEscaped();
  return out.join(QStringLiteral(", "));
}

}  // namespace

CmdlineDialog::CmdlineDialog(app::ConfigDocument* document, QWidget* parent)
    : QDialog(parent),
      document_(document),
      input_(new QPlainTextEdit),
      report_(new QLabel),
      buttons_(new QDialogButtonBox(QDialogButtonBox::Apply | QDialogButtonBox::Cancel)) {
  setWindowTitle(tr("Import an OpenFlamingo command line"));
  setObjectName(QStringLiteral("cmdlineDialog"));
  input_->setPlaceholderText(
      tr("torchrun --nnodes=1 --nproc_per_node=8 open_flamingo/train/train.py --lm_path ... "
         "--batch_size_mmc4 4 ..."));
  report_->setWordWrap(true);
  report_->setTextFormat(Qt::RichText);
  report_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(new QLabel(tr("Paste the command line (backslash-continued lines are fine):")));
  layout->addWidget(input_, 2);
  layout->addWidget(report_, 1);
  layout->addWidget(buttons_);
  connect(input_, &QPlainTextEdit::textChanged, this, &CmdlineDialog::reimport);
  connect(buttons_->button(QDialogButtonBox::Apply), &QPushButton::clicked, this, [this] {
    if (apply()) accept();
  });
  connect(buttons_, &QDialogButtonBox::rejected, this, &QDialog::reject);
  resize(820, 520);
  reimport();
}

void CmdlineDialog::reimport() {
  const std::string text = input_->toPlainText().trimmed().toStdString();
  buttons_->button(QDialogButtonBox::Apply)->setEnabled(false);
  if (text.empty()) {
    report_->setText(tr("Nothing pasted yet."));
    return;
  }
  last_ = protocol::importOpenFlamingoCmdline(text);
  QStringList parts;
  parts << (last_.ok() ? tr("<b>Imports as a run config</b> (%n dataset(s)).", nullptr,
                            static_cast<int>(last_.config.data.datasets.size()))
                       : tr("<b>Cannot import</b>: fix the errors below."));
  if (!last_.problems.empty()) parts << problemLines(last_.problems);
  if (!last_.unknownFlags.empty()) parts << tr("Unknown (not applied): %1").arg(words(last_.unknownFlags));
  if (!last_.ignoredFlags.empty())
    parts << tr("Ignored (no effect on the run): %1").arg(words(last_.ignoredFlags));
  report_->setText(parts.join(QStringLiteral("<br>")));
  buttons_->button(QDialogButtonBox::Apply)->setEnabled(last_.ok());
}

QString CmdlineDialog::reportText() const {
  return report_->text();
}

bool CmdlineDialog::apply() {
  if (input_->toPlainText().trimmed().isEmpty() || !last_.ok()) return false;
  document_->setConfig(last_.config);
  return true;
}

CmdlineCopy commandLineFor(const protocol::RunConfig& config) {
  const auto exported = protocol::exportOpenFlamingoCmdline(config);
  CmdlineCopy out;
  out.line = QString::fromStdString(exported.line);
  QStringList problems;
  for (const auto& p : exported.notExpressible) {
    problems << QStringLiteral("%1: %2").arg(QString::fromStdString(p.path),
                                             QString::fromStdString(p.message));
  }
  out.notExpressible = problems.join(QLatin1Char('\n'));
  return out;
}

}  // namespace fs::ui
