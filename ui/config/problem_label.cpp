#include "ui/config/problem_label.h"

#include "ui/config/form_registry.h"

namespace fs::ui {
namespace {

// NOTE [No word-wrapped labels in the form]: QLabel::setWordWrap makes the
// label height-for-width, and the nested layouts of the form then let the
// scroll area under-estimate the page height, squeezing rows together. The
// label wraps its text itself, at word boundaries, so its size is exact.
constexpr qsizetype kWrapColumn = 90;

QString wrapped(const QString& text, qsizetype firstLineUsed) {
  QStringList lines;
  QString current;
  qsizetype limit = kWrapColumn - firstLineUsed;
  for (const QString& word : text.split(QLatin1Char(' '))) {
    if (!current.isEmpty() && current.size() + 1 + word.size() > limit) {
      lines << current;
      current.clear();
      limit = kWrapColumn;
    }
    current += (current.isEmpty() ? QString() : QStringLiteral(" ")) + word;
  }
  lines << current;
  for (auto& l : lines) l = l.toHtmlEscaped();
  return lines.join(QStringLiteral("<br>"));
}

QString line(const char* color, const QString& what, const QString& message, const QString& fix) {
  QString html = QStringLiteral("<span style=\"color:%1\"><b>%2:</b> %3</span>")
                     .arg(QLatin1String(color), what, wrapped(message, what.size() + 2));
  if (!fix.isEmpty())
    html += QStringLiteral("<br><span style=\"color:#555\">Fix: %1</span>").arg(wrapped(fix, 5));
  return html;
}

}  // namespace

ProblemLabel::ProblemLabel(const QString& path, QWidget* parent) : QLabel(parent), path_(path) {
  setObjectName(problemLabelObjectName(path));
  setTextFormat(Qt::RichText);
  setTextInteractionFlags(Qt::TextSelectableByMouse);
  setVisible(false);
}

void ProblemLabel::setProblems(std::vector<protocol::Problem> problems) {
  if (problems == problems_) return;
  problems_ = std::move(problems);
  render();
}

void ProblemLabel::setInputError(const QString& message) {
  if (message == inputError_) return;
  inputError_ = message;
  render();
}

void ProblemLabel::render() {
  QStringList lines;
  if (!inputError_.isEmpty()) lines << line(kErrorColor, tr("Not applied"), inputError_, QString());
  for (const auto& p : problems_) {
    // A problem shown at an ancestor (a section) names its own field.
    QString message = QString::fromStdString(p.message);
    const QString where = QString::fromStdString(p.path);
    if (where != path_ && !where.isEmpty()) message = where + QStringLiteral(": ") + message;
    lines << line(p.isError() ? kErrorColor : kWarningColor, p.isError() ? tr("Error") : tr("Warning"),
                  message, QString::fromStdString(p.fix));
  }
  setText(lines.join(QStringLiteral("<br>")));
  setVisible(!lines.isEmpty());
}

}  // namespace fs::ui
