// DatasetListEditor: the list of datasets (data.datasets) as tabs, one per
// element, each a SectionGroup generated from the element's SectionSpec.
//
// "Add" offers the element's `type` choices from the schema (laion, mmc4);
// "Remove" removes the current tab's dataset. Both go through the
// ConfigDocument, whose datasetsChanged() makes the form call rebuild().
// Tabs are titled with the dataset's name and marked when they hold problems.
//
// NOTE [Tab bar, not QTabWidget]: the pages sit in a plain layout with only
// the current one shown, under a QTabBar. A QTabWidget's stack does not pass
// on height-for-width, so pages whose word-wrapped problem labels grow were
// squeezed instead of making the form scroll.
//
// Ownership: Qt parent/child. `document` and `registry` outlive the editor.
// Thread-safety: GUI thread only.
#pragma once

#include <QList>
#include <QString>
#include <QWidget>
#include <vector>

#include "backend/protocol/config/schema.h"
#include "backend/protocol/problem.h"

class QTabBar;
class QToolButton;
class QVBoxLayout;

namespace fs::app {
class ConfigDocument;
}

namespace fs::ui {

class FormRegistry;

class DatasetListEditor : public QWidget {
  Q_OBJECT
 public:
  // REQUIRES: list.kind == kList.
  DatasetListEditor(const protocol::EntrySpec& list, const QString& path, app::ConfigDocument* document,
                    FormRegistry* registry, QWidget* parent = nullptr);

  QString path() const { return path_; }
  // Path of element `index`: "data.datasets[1]".
  QString elementPath(int index) const;

  // Recreates one tab per element of the document's list (paths may have
  // moved) and re-registers their widgets. Keeps the current tab when it still exists.
  void rebuild();
  // Tab titles from the elements' names.
  void updateTitles();
  // Marks each tab with an icon when problems lie under its element.
  void markProblems(const std::vector<protocol::Problem>& problems);
  // Makes element `index`'s tab current.
  void showElement(int index);
  // Makes current the tab whose page holds `descendant`; false when none does.
  bool reveal(const QWidget* descendant);

  int count() const;
  int currentIndex() const;
  QTabBar* tabBar() const { return tabBar_; }
  QWidget* page(int index) const;
  QToolButton* addButton() const { return add_; }
  QToolButton* removeButton() const { return remove_; }

 private:
  const protocol::EntrySpec& list_;
  QString path_;
  app::ConfigDocument* document_;
  FormRegistry* registry_;
  QTabBar* tabBar_;
  QVBoxLayout* pageLayout_;
  QList<QWidget*> pages_;
  QToolButton* add_;
  QToolButton* remove_;
};

}  // namespace fs::ui
