#include "ui/config/dataset_list_editor.h"

#include <QFrame>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QSignalBlocker>
#include <QStyle>
#include <QTabBar>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>

#include "app/config/config_document.h"
#include "ui/config/form_registry.h"
#include "ui/config/problem_label.h"
#include "ui/config/section_group.h"

namespace fs::ui {

DatasetListEditor::DatasetListEditor(const protocol::EntrySpec& list, const QString& path,
                                     app::ConfigDocument* document, FormRegistry* registry, QWidget* parent)
    : QWidget(parent),
      list_(list),
      path_(path),
      document_(document),
      registry_(registry),
      tabBar_(new QTabBar),
      pageLayout_(new QVBoxLayout),
      add_(new QToolButton),
      remove_(new QToolButton) {
  setObjectName(QStringLiteral("list:") + path);
  auto* title = new QLabel(
      QStringLiteral("<b>%1</b> \u2014 %2")
          .arg(QString::fromStdString(list.key), QString::fromStdString(list.help).toHtmlEscaped()));
  title->setToolTip(QString::fromStdString(list.help));

  // "Add" offers the element type's choices when the element has one.
  add_->setText(tr("Add"));
  add_->setToolButtonStyle(Qt::ToolButtonTextOnly);
  const protocol::EntrySpec* type = list.section->find("type");
  const std::vector<std::string> types =
      type != nullptr && !type->choices.empty() ? type->choices : std::vector<std::string>{std::string()};
  if (types.size() > 1) {
    auto* menu = new QMenu(add_);
    for (const auto& t : types) {
      menu->addAction(tr("%1 dataset").arg(QString::fromStdString(t)), this,
                      [this, t] { showElement(document_->addDataset(t)); });
    }
    add_->setMenu(menu);
    add_->setPopupMode(QToolButton::InstantPopup);
  } else {
    connect(add_, &QToolButton::clicked, this,
            [this, t = types.front()] { showElement(document_->addDataset(t)); });
  }
  remove_->setText(tr("Remove"));
  remove_->setToolTip(tr("Remove the dataset of the current tab"));
  connect(remove_, &QToolButton::clicked, this, [this] {
    if (currentIndex() >= 0) document_->removeDataset(currentIndex());
  });
  tabBar_->setExpanding(false);
  tabBar_->setDrawBase(true);
  connect(tabBar_, &QTabBar::currentChanged, this, [this](int index) {
    for (int i = 0; i < pages_.size(); ++i) pages_[i]->setVisible(i == index);
  });

  auto* header = new QHBoxLayout;
  header->addWidget(title, 1);
  header->addWidget(add_);
  header->addWidget(remove_);
  auto* problems = new ProblemLabel(path);  // "no datasets", ...
  registry_->addProblemLabel(path, problems);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 6, 0, 0);
  layout->addLayout(header);
  layout->addWidget(problems);
  layout->addWidget(tabBar_);
  auto* frame = new QFrame;
  frame->setFrameShape(QFrame::StyledPanel);
  frame->setLayout(pageLayout_);
  layout->addWidget(frame);
}

QString DatasetListEditor::elementPath(int index) const {
  return path_ + QStringLiteral("[%1]").arg(index);
}

void DatasetListEditor::rebuild() {
  const int current = currentIndex();
  registry_->removeUnder(path_ + QLatin1Char('['));
  const QSignalBlocker block(tabBar_);
  while (tabBar_->count() > 0) tabBar_->removeTab(0);
  qDeleteAll(pages_);
  pages_.clear();
  const int n = document_->listSize(path_.toStdString());
  for (int i = 0; i < n; ++i) {
    auto* page = new SectionGroup(*list_.section, elementPath(i), QString(), SectionGroup::Contents::kAll,
                                  document_, registry_);
    page->setFlat(true);
    pageLayout_->addWidget(page);
    pages_.push_back(page);
    tabBar_->addTab(QString());
  }
  remove_->setEnabled(n > 0);
  updateTitles();
  // A hidden QTabBar (another section tab is current) does not tell the layout
  // that its size changed; without this it stays 0 px tall once shown.
  tabBar_->updateGeometry();
  showElement(n > 0 ? std::clamp(current, 0, n - 1) : -1);
}

void DatasetListEditor::updateTitles() {
  for (int i = 0; i < count(); ++i) {
    auto name = document_->fieldValue((elementPath(i) + QStringLiteral(".name")).toStdString());
    auto type = document_->fieldValue((elementPath(i) + QStringLiteral(".type")).toStdString());
    QString title = name.isOk() ? QString::fromStdString(std::get<std::string>(name.value())) : QString();
    tabBar_->setTabText(i, title.isEmpty() ? tr("(unnamed %1)").arg(i) : title);
    tabBar_->setTabToolTip(
        i, type.isOk() ? QString::fromStdString(std::get<std::string>(type.value())) : QString());
  }
}

void DatasetListEditor::markProblems(const std::vector<protocol::Problem>& problems) {
  for (int i = 0; i < count(); ++i) {
    const std::string prefix = elementPath(i).toStdString();
    bool error = false, warning = false;
    for (const auto& p : problems) {
      if (p.path.rfind(prefix, 0) != 0 || (p.path.size() > prefix.size() && p.path[prefix.size()] != '.'))
        continue;
      (p.isError() ? error : warning) = true;
    }
    const auto icon = error ? QStyle::SP_MessageBoxCritical : QStyle::SP_MessageBoxWarning;
    tabBar_->setTabIcon(i, error || warning ? style()->standardIcon(icon) : QIcon());
  }
}

void DatasetListEditor::showElement(int index) {
  if (index >= 0 && index < count()) tabBar_->setCurrentIndex(index);
  for (int i = 0; i < pages_.size(); ++i) pages_[i]->setVisible(i == tabBar_->currentIndex());
}

bool DatasetListEditor::reveal(const QWidget* descendant) {
  for (int i = 0; i < pages_.size(); ++i) {
    if (pages_[i]->isAncestorOf(descendant)) {
      showElement(i);
      return true;
    }
  }
  return false;
}

int DatasetListEditor::count() const {
  return static_cast<int>(pages_.size());
}

int DatasetListEditor::currentIndex() const {
  return pages_.isEmpty() ? -1 : tabBar_->currentIndex();
}

QWidget* DatasetListEditor::page(int index) const {
  return pages_.value(index);
}

}  // namespace fs::ui
