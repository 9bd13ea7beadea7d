// ConfigForm: the run config as a form generated entirely from the schema.
//
// One tab per top-level section (the root's own fields under "run"), nested
// sections as sub-groups, the dataset list as tabs with add / remove. Each
// field's editor follows its type, carries the help text as its tooltip and
// hides itself when its appliesWhen condition does not hold. Every problem of
// the last validation is shown beside its field (or its section), the
// section tabs are marked, and a summary list sits below; picking a problem
// shows its field.
//
// A "Plan memory…" button in the tabs' corner asks for the memory planner
// (planRequested): the window decides what opens.
//
// The form edits a ConfigDocument and follows it: editing a field updates the
// document; loading or replacing the config updates every editor.
//
// Ownership: does not own the document, which must outlive the form.
// Thread-safety: GUI thread only.
#pragma once

#include <QHash>
#include <QString>
#include <QWidget>
#include <memory>

class QPushButton;
class QTabWidget;

namespace fs::app {
class ConfigDocument;
}

namespace fs::ui {

class DatasetListEditor;
class FieldEditor;
class FieldRow;
class FormRegistry;
class ProblemLabel;
class ProblemList;

class ConfigForm : public QWidget {
  Q_OBJECT
 public:
  explicit ConfigForm(app::ConfigDocument* document, QWidget* parent = nullptr);
  ~ConfigForm() override;

  // Shows the tab (and dataset) holding `path` or its nearest shown ancestor,
  // scrolls to it and focuses its editor.
  void focusField(const QString& path);

  // The widgets of one field or section by canonical path; nullptr when none.
  FieldRow* row(const QString& path) const;
  FieldEditor* editor(const QString& path) const;
  ProblemLabel* problemLabel(const QString& path) const;
  QTabWidget* sectionTabs() const { return tabs_; }
  ProblemList* problemList() const { return summary_; }
  QList<DatasetListEditor*> listEditors() const { return lists_; }
  QPushButton* planButton() const { return planButton_; }

 signals:
  // The user asked for the memory plan of the document's config.
  void planRequested();

 private:
  void addSectionTab(QWidget* group, const QString& key, const QString& help);
  void rebuildLists();
  void refreshAll();
  void refreshField(const QString& path);
  void refreshVisibility();
  void showProblems();
  int tabOf(const QString& path) const;

  app::ConfigDocument* document_;
  std::unique_ptr<FormRegistry> registry_;
  QTabWidget* tabs_;
  ProblemList* summary_;
  QPushButton* planButton_;
  QList<DatasetListEditor*> lists_;
  QHash<QString, int> tabByKey_;  // top-level section key -> tab index
};

}  // namespace fs::ui
