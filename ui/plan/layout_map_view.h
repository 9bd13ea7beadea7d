// LayoutMapView: the unit-layout map, ours beside the reference's FSDP1.
//
//   [title / what the source lacks]                       [Export PNG...] [Export SVG...]
//   treemap: ours                 | treemap: the reference
//   legend
//   module tree (unit boundaries) | the selected unit: parameters, gathered size, peak
//                                 | differences from the reference | per-rank shard bytes
//
// Fed from a plan (setPlan: an estimate and the reference's estimate with the
// same strategy) or from a live run: its `layout` event (setLiveLayout) laid
// over the plan of the run's own config.yaml (setLivePlan, planned off the GUI
// thread by the monitor's EstimateView): the planned module tree, units and
// gathered sizes with the run's shard bytes, the reference beside it, and the
// plan's and the run's disagreements outlined (app/plan/layout_overlay.h).
// Until the plan arrives, or when it failed, the event alone (NOTE [What a
// live layout event lacks] in app/plan/layout_map.h).
// Clicking a unit in either treemap or the module tree selects it on both
// sides. Exports render the two treemaps and the legend through
// LayoutTreemapWidget::paintMap on the GUI thread into bytes; the file is
// written on a pool thread (writeFileAsync).
//
// Ownership: owns its children. Thread-safety: GUI thread only.
#pragma once

#include <QFuture>
#include <QWidget>
#include <optional>

#include "app/plan/layout_map.h"
#include "app/plan/plan.h"
#include "backend/protocol/wire/events.h"

class QLabel;
class QListWidget;
class QPushButton;
class QTableWidget;
class QTreeWidget;
class QTreeWidgetItem;

namespace fs::ui {

class LayoutTreemapWidget;

class LayoutMapView : public QWidget {
  Q_OBJECT
 public:
  explicit LayoutMapView(QWidget* parent = nullptr);

  // The map of plan.estimates[estimate] beside the reference's; a reference
  // estimate itself is shown beside our openflamingo one of its strategy.
  void setPlan(const app::Plan& plan, int estimate);
  // A live run: its layout event and the plan of its config.yaml, in either order.
  void setLiveLayout(const protocol::LayoutEvent& layout);
  void setLivePlan(const app::Plan& plan);
  void setLivePlanError(const QString& error);
  void clear();

  // Selects the unit with `path` on both sides ("" = the root unit).
  void selectUnit(const QString& path);
  std::optional<QString> selectedPath() const { return selected_; }

  // The two treemaps and the legend, `size` in pixels (the SVG's too).
  QByteArray renderPng(const QSize& size) const;
  QByteArray renderSvg(const QSize& size) const;
  // Writes renderPng / renderSvg (by the suffix, .png or .svg) at the panes'
  // size; the future's result is "" or the error naming the file.
  QFuture<QString> exportImage(const QString& path);

  LayoutTreemapWidget* oursMap() const { return ours_; }
  LayoutTreemapWidget* referenceMap() const { return reference_; }
  QTreeWidget* moduleTree() const { return tree_; }
  QTreeWidget* paramList() const { return params_; }
  QLabel* unitDetails() const { return details_; }
  QListWidget* differences() const { return diffs_; }
  QTableWidget* rankTable() const { return ranks_; }
  QLabel* header() const { return header_; }
  QPushButton* exportPngButton() const { return exportPng_; }
  QPushButton* exportSvgButton() const { return exportSvg_; }

 signals:
  // After an export: "" or the error.
  void exported(const QString& path, const QString& error);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;  // paints the legend

 private:
  void showMaps(app::LayoutMap ours, std::optional<app::LayoutMap> reference, const QString& headerText,
                std::vector<app::LayoutDifference> first = {});
  void showLive();
  void fillTree();
  void fillRanks();
  void showSelected();
  void exportWithDialog(const QString& suffix);
  void paintMaps(QPainter& painter, const QSize& size) const;

  LayoutTreemapWidget* ours_;
  LayoutTreemapWidget* reference_;
  QLabel* header_;
  QWidget* legend_ = nullptr;
  QPushButton* exportPng_;
  QPushButton* exportSvg_;
  QTreeWidget* tree_;
  QTreeWidget* params_;
  QLabel* details_;
  QListWidget* diffs_;
  QTableWidget* ranks_;
  std::vector<app::LayoutDifference> differences_;
  std::optional<QString> selected_;
  std::optional<protocol::LayoutEvent> live_;  // a live run's, with livePlan_ or livePlanError_
  std::optional<app::Plan> livePlan_;
  QString livePlanError_;
};

}  // namespace fs::ui
