#include "ui/config/config_form.h"

#include <QMap>
#include <QPushButton>
#include <QScrollArea>
#include <QStackedWidget>
#include <QStyle>
#include <QTabWidget>
#include <QVBoxLayout>

#include "app/config/config_document.h"
#include "ui/config/dataset_list_editor.h"
#include "ui/config/field_editor.h"
#include "ui/config/field_row.h"
#include "ui/config/form_registry.h"
#include "ui/config/problem_label.h"
#include "ui/config/problem_list.h"
#include "ui/config/section_group.h"

namespace fs::ui {
namespace {

const QString kRootTab = QStringLiteral("run");

QString topKey(const QString& path) {
  qsizetype end = path.size();
  for (QChar c : {QLatin1Char('.'), QLatin1Char('[')}) {
    const qsizetype i = path.indexOf(c);
    if (i >= 0) end = std::min(end, i);
  }
  return path.left(end);
}

}  // namespace

ConfigForm::ConfigForm(app::ConfigDocument* document, QWidget* parent)
    : QWidget(parent),
      document_(document),
      registry_(std::make_unique<FormRegistry>()),
      tabs_(new QTabWidget),
      summary_(new ProblemList),
      planButton_(new QPushButton(tr("Plan memory\u2026"))) {
  setObjectName(QStringLiteral("configForm"));
  planButton_->setObjectName(QStringLiteral("planMemoryButton"));
  planButton_->setToolTip(tr("Per-rank memory of every FSDP strategy and wrap policy for this config"));
  tabs_->setCornerWidget(planButton_, Qt::TopRightCorner);
  connect(planButton_, &QPushButton::clicked, this, &ConfigForm::planRequested);
  tabs_->setObjectName(QStringLiteral("configSections"));
  tabs_->setDocumentMode(true);
  tabs_->setUsesScrollButtons(true);

  const protocol::SectionSpec& root = protocol::runConfigSchema();
  addSectionTab(new SectionGroup(root, QString(), tr("Run: name, where it is written, seed"),
                                 SectionGroup::Contents::kFieldsOnly, document_, registry_.get()),
                kRootTab, QString::fromStdString(root.help));
  for (const auto& entry : root.entries) {
    if (entry.kind != protocol::EntrySpec::Kind::kSection) continue;
    const QString key = QString::fromStdString(entry.key);
    addSectionTab(new SectionGroup(*entry.section, key, QString::fromStdString(entry.help),
                                   SectionGroup::Contents::kAll, document_, registry_.get()),
                  key, QString::fromStdString(entry.help));
  }
  lists_ = tabs_->findChildren<DatasetListEditor*>();

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(tabs_, 1);
  layout->addWidget(summary_);

  connect(document_, &app::ConfigDocument::configReset, this, [this] {
    rebuildLists();
    refreshAll();
    showProblems();
  });
  connect(document_, &app::ConfigDocument::datasetsChanged, this, [this] {
    rebuildLists();
    refreshAll();
    showProblems();
  });
  connect(document_, &app::ConfigDocument::fieldChanged, this, &ConfigForm::refreshField);
  connect(document_, &app::ConfigDocument::problemsChanged, this, &ConfigForm::showProblems);
  connect(summary_, &ProblemList::problemActivated, this, &ConfigForm::focusField);

  rebuildLists();
  refreshAll();
  showProblems();
}

ConfigForm::~ConfigForm() = default;

void ConfigForm::addSectionTab(QWidget* group, const QString& key, const QString& help) {
  auto* scroll = new QScrollArea;
  scroll->setObjectName(QStringLiteral("tab:") + key);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setWidget(group);
  const int index = tabs_->addTab(scroll, key);
  tabs_->setTabToolTip(index, help);
  tabByKey_.insert(key, index);
}

FieldRow* ConfigForm::row(const QString& path) const {
  return registry_->row(path);
}

FieldEditor* ConfigForm::editor(const QString& path) const {
  FieldRow* r = registry_->row(path);
  return r != nullptr ? r->editor() : nullptr;
}

ProblemLabel* ConfigForm::problemLabel(const QString& path) const {
  return registry_->problemLabel(path);
}

void ConfigForm::rebuildLists() {
  for (DatasetListEditor* list : lists_) list->rebuild();
}

void ConfigForm::refreshAll() {
  for (FieldRow* r : registry_->rows()) {
    auto value = document_->fieldValue(r->path().toStdString());
    if (value.isOk()) r->editor()->setValue(value.value());
  }
  refreshVisibility();
  for (DatasetListEditor* list : lists_) list->updateTitles();
}

void ConfigForm::refreshField(const QString& path) {
  if (FieldRow* r = registry_->row(path)) {
    auto value = document_->fieldValue(path.toStdString());
    if (value.isOk()) r->editor()->setValue(value.value());
  }
  // A field can decide whether its siblings apply (a dataset's type) or name a tab.
  refreshVisibility();
  if (path.contains(QLatin1Char('['))) {  // a list element's name or type titles its tab
    for (DatasetListEditor* list : lists_) list->updateTitles();
  }
}

void ConfigForm::refreshVisibility() {
  for (FieldRow* r : registry_->rows()) {
    if (!r->editor()->spec().appliesWhen.empty())
      r->setApplies(document_->fieldApplies(r->path().toStdString()));
  }
}

int ConfigForm::tabOf(const QString& path) const {
  return tabByKey_.value(topKey(path), tabByKey_.value(kRootTab));
}

void ConfigForm::showProblems() {
  const auto& problems = document_->problems();
  QMap<ProblemLabel*, std::vector<protocol::Problem>> byLabel;
  for (ProblemLabel* label : registry_->problemLabels()) byLabel[label];  // clear the rest
  QHash<int, bool> tabHasError;
  for (const auto& p : problems) {
    const QString path = QString::fromStdString(p.path);
    if (ProblemLabel* label = registry_->labelFor(path)) byLabel[label].push_back(p);
    tabHasError[tabOf(path)] |= p.isError();
  }
  for (auto it = byLabel.begin(); it != byLabel.end(); ++it) it.key()->setProblems(std::move(it.value()));
  for (int i = 0; i < tabs_->count(); ++i) {
    const auto icon = tabHasError.value(i) ? QStyle::SP_MessageBoxCritical : QStyle::SP_MessageBoxWarning;
    tabs_->setTabIcon(i, tabHasError.contains(i) ? style()->standardIcon(icon) : QIcon());
  }
  for (DatasetListEditor* list : lists_) list->markProblems(problems);
  summary_->setProblems(problems);
}

void ConfigForm::focusField(const QString& path) {
  FieldRow* fieldRow = registry_->row(path);
  QWidget* target = fieldRow;
  if (fieldRow == nullptr)
    target = registry_->labelFor(path);
  else if (!fieldRow->applies())
    target = registry_->labelFor(parentPath(path));
  if (target == nullptr) return;
  // Bring forward every tab on the way up: the dataset's, then the section's.
  for (QWidget* w = target; w != nullptr; w = w->parentWidget()) {
    if (auto* list = qobject_cast<DatasetListEditor*>(w)) list->reveal(target);
    auto* stack = qobject_cast<QStackedWidget*>(w->parentWidget());
    auto* tabs = stack != nullptr ? qobject_cast<QTabWidget*>(stack->parentWidget()) : nullptr;
    if (tabs != nullptr) tabs->setCurrentWidget(w);
  }
  for (QWidget* w = target->parentWidget(); w != nullptr; w = w->parentWidget()) {
    if (auto* scroll = qobject_cast<QScrollArea*>(w)) {
      scroll->ensureWidgetVisible(target);
      break;
    }
  }
  if (auto* r = qobject_cast<FieldRow*>(target)) r->editor()->input()->setFocus(Qt::OtherFocusReason);
}

}  // namespace fs::ui
