#include "ui/config/problem_list.h"

#include <QLabel>
#include <QListWidget>
#include <QStyle>
#include <QVBoxLayout>

#include "ui/config/problem_label.h"

namespace fs::ui {

ProblemList::ProblemList(QWidget* parent) : QWidget(parent), header_(new QLabel), list_(new QListWidget) {
  setObjectName(QStringLiteral("problemList"));
  list_->setWordWrap(true);
  list_->setAlternatingRowColors(true);
  list_->setMaximumHeight(160);  // a summary: the form keeps the room, the list scrolls
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(header_);
  layout->addWidget(list_);
  auto activate = [this](QListWidgetItem* item) {
    emit problemActivated(item->data(Qt::UserRole).toString());
  };
  connect(list_, &QListWidget::itemActivated, this, activate);
  connect(list_, &QListWidget::itemClicked, this, activate);
  setProblems({});
}

void ProblemList::setProblems(const std::vector<protocol::Problem>& problems) {
  list_->clear();
  int errors = 0;
  for (const auto& p : problems) {
    errors += p.isError() ? 1 : 0;
    const QString path = QString::fromStdString(p.path);
    QString text =
        (path.isEmpty() ? tr("config") : path) + QStringLiteral(": ") + QString::fromStdString(p.message);
    if (!p.fix.empty()) text += QStringLiteral("\n") + tr("Fix: %1").arg(QString::fromStdString(p.fix));
    auto* item = new QListWidgetItem(
        style()->standardIcon(p.isError() ? QStyle::SP_MessageBoxCritical : QStyle::SP_MessageBoxWarning),
        text, list_);
    item->setData(Qt::UserRole, path);
    item->setToolTip(QString::fromStdString(p.toString()));
  }
  const int warnings = static_cast<int>(problems.size()) - errors;
  list_->setVisible(!problems.empty());
  if (problems.empty()) {
    header_->setText(tr("<b>Problems:</b> none \u2014 the config is valid"));
  } else {
    header_->setText(tr("<b>Problems:</b> <span style=\"color:%1\">%2 error(s)</span>, "
                        "<span style=\"color:%3\">%4 warning(s)</span> \u2014 click one to show its field")
                         .arg(QLatin1String(kErrorColor))
                         .arg(errors)
                         .arg(QLatin1String(kWarningColor))
                         .arg(warnings));
  }
}

}  // namespace fs::ui
