#include "ui/plan/layout_map_view.h"

#include <QBuffer>
#include <QEvent>
#include <QFileDialog>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QImage>
#include <QLabel>
#include <QListWidget>
#include <QPainter>
#include <QPainterPath>
#include <QPushButton>
#include <QSplitter>
#include <QSvgGenerator>
#include <QTableWidget>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <functional>

#include "app/plan/layout_overlay.h"
#include "ui/plan/layout_treemap_widget.h"
#include "ui/plots/file_export.h"
#include "ui/plots/format_units.h"

namespace fs::ui {
namespace {

constexpr double kLegendHeight = 24;
constexpr int kPathRole = Qt::UserRole + 1;

// The units the maps outline: a different unit, FSDP1's unfrozen layers, the tied head. A dtype alone
// (our frozen parts stored narrower) is listed, not outlined: it touches nearly every unit.
bool outlined(const app::LayoutDifference& d) {
  return d.kind != app::LayoutDiffKind::kDifferentBytes;
}

QSet<QString> pathsOf(const std::vector<app::LayoutDifference>& diffs) {
  QSet<QString> s;
  for (const auto& d : diffs)
    if (outlined(d)) s.insert(d.path);
  return s;
}

// Our openflamingo estimate with `strategy` (the reference's own units), else our first.
int oursFor(const app::Plan& plan, const QString& strategy) {
  int first = -1;
  for (size_t i = 0; i < plan.estimates.size(); ++i) {
    const auto& e = plan.estimates[i];
    if (e.engine != QLatin1String("ours")) continue;
    if (first < 0) first = int(i);
    if (e.strategy == strategy && e.policy == QLatin1String("openflamingo")) return int(i);
  }
  return first;
}

QString phaseText(const QString& phase) {
  if (phase == QLatin1String("forward")) return QObject::tr("in the forward");
  if (phase == QLatin1String("backward")) return QObject::tr("in the backward");
  if (phase == QLatin1String("head_forward")) return QObject::tr("at the output head, in the forward");
  if (phase == QLatin1String("head_backward"))
    return QObject::tr("at the output head, as the backward starts");
  return phase;
}

}  // namespace

LayoutMapView::LayoutMapView(QWidget* parent)
    : QWidget(parent),
      ours_(new LayoutTreemapWidget),
      reference_(new LayoutTreemapWidget),
      header_(new QLabel),
      exportPng_(new QPushButton(tr("Export PNG..."))),
      exportSvg_(new QPushButton(tr("Export SVG..."))),
      tree_(new QTreeWidget),
      params_(new QTreeWidget),
      details_(new QLabel),
      diffs_(new QListWidget),
      ranks_(new QTableWidget) {
  setObjectName(QStringLiteral("layoutMapView"));
  ours_->setObjectName(QStringLiteral("layoutMapOurs"));
  reference_->setObjectName(QStringLiteral("layoutMapReference"));
  header_->setWordWrap(true);
  tree_->setHeaderLabels({tr("Module"), tr("Bytes"), tr("Unit")});
  tree_->header()->setSectionResizeMode(0, QHeaderView::Stretch);
  params_->setHeaderLabels({tr("Parameter"), tr("Elements"), tr("Bytes"), tr("Trains")});
  params_->setRootIsDecorated(false);
  params_->header()->setSectionResizeMode(0, QHeaderView::Stretch);
  details_->setWordWrap(true);
  details_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  details_->setText(tr("Click a unit to list its parameters."));
  diffs_->setWordWrap(true);
  ranks_->verticalHeader()->setVisible(false);
  ranks_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  ranks_->setEditTriggers(QAbstractItemView::NoEditTriggers);

  auto* top = new QHBoxLayout;
  top->addWidget(header_, 1);
  top->addWidget(exportPng_);
  top->addWidget(exportSvg_);
  auto* maps = new QSplitter(Qt::Horizontal);
  maps->addWidget(ours_);
  maps->addWidget(reference_);
  auto* legend = new QWidget;
  legend->setFixedHeight(int(kLegendHeight));
  legend->installEventFilter(this);
  auto* unitPane = new QSplitter(Qt::Vertical);
  auto* unitBox = new QWidget;
  auto* unitLayout = new QVBoxLayout(unitBox);
  unitLayout->setContentsMargins(0, 0, 0, 0);
  unitLayout->addWidget(details_);
  unitLayout->addWidget(params_, 1);
  unitPane->addWidget(unitBox);
  unitPane->addWidget(diffs_);
  unitPane->addWidget(ranks_);
  unitPane->setStretchFactor(0, 3);
  unitPane->setStretchFactor(1, 2);
  unitPane->setStretchFactor(2, 1);
  details_->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Minimum);
  auto* bottom = new QSplitter(Qt::Horizontal);
  bottom->addWidget(tree_);
  bottom->addWidget(unitPane);
  auto* all = new QSplitter(Qt::Vertical);
  auto* mapBox = new QWidget;
  auto* mapLayout = new QVBoxLayout(mapBox);
  mapLayout->setContentsMargins(0, 0, 0, 0);
  mapLayout->addWidget(maps, 1);
  mapLayout->addWidget(legend);
  all->addWidget(mapBox);
  all->addWidget(bottom);
  all->setStretchFactor(0, 3);
  all->setStretchFactor(1, 2);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(all, 1);
  legend_ = legend;

  connect(ours_, &LayoutTreemapWidget::unitClicked, this, &LayoutMapView::selectUnit);
  connect(reference_, &LayoutTreemapWidget::unitClicked, this, &LayoutMapView::selectUnit);
  connect(tree_, &QTreeWidget::currentItemChanged, this, [this](QTreeWidgetItem* item) {
    if (item != nullptr && item->data(0, kPathRole).isValid())
      selectUnit(item->data(0, kPathRole).toString());
  });
  connect(diffs_, &QListWidget::currentItemChanged, this, [this](QListWidgetItem* item) {
    if (item != nullptr) selectUnit(item->data(kPathRole).toString());
  });
  connect(exportPng_, &QPushButton::clicked, this, [this] { exportWithDialog(QStringLiteral("png")); });
  connect(exportSvg_, &QPushButton::clicked, this, [this] { exportWithDialog(QStringLiteral("svg")); });
  clear();
}

bool LayoutMapView::eventFilter(QObject* watched, QEvent* event) {
  if (watched == legend_ && event->type() == QEvent::Paint) {
    QPainter p(legend_);
    LayoutTreemapWidget::paintLegend(p, QRectF(legend_->rect()));
    return true;
  }
  return QWidget::eventFilter(watched, event);
}

void LayoutMapView::clear() {
  live_.reset();
  livePlan_.reset();
  livePlanError_.clear();
  showMaps(app::LayoutMap{}, std::nullopt, tr("No layout yet: plan a config, or follow a run."));
}

void LayoutMapView::setPlan(const app::Plan& plan, int estimate) {
  live_.reset();
  livePlan_.reset();
  livePlanError_.clear();
  if (estimate < 0 || estimate >= static_cast<int>(plan.estimates.size())) {
    clear();
    return;
  }
  int oursIndex = estimate;
  if (plan.estimates[size_t(estimate)].engine != QLatin1String("ours"))
    oursIndex = oursFor(plan, plan.estimates[size_t(estimate)].strategy);
  if (oursIndex < 0) {
    clear();
    return;
  }
  app::LayoutMap ours = app::layoutMapFromPlan(plan, oursIndex);
  const int ref = app::referenceEstimateFor(plan, oursIndex);
  std::optional<app::LayoutMap> reference;
  if (ref >= 0) reference = app::layoutMapFromPlan(plan, ref);
  QString text = tr("%1 ranks on %2 node(s), %3 LM.").arg(plan.world).arg(plan.nodes).arg(plan.family);
  if (!reference) text += tr(" The plan has no reference layout.");
  const auto& e = plan.estimates[size_t(oursIndex)];
  if (!e.peakPhase.isEmpty()) {
    if (e.peakUnit >= 0 && e.peakUnit < int(ours.units.size()))
      text += tr(" Ours peaks %1 of %2.").arg(phaseText(e.peakPhase), ours.units[size_t(e.peakUnit)].label());
    else
      text += tr(" Ours peaks %1.").arg(phaseText(e.peakPhase));
  }
  if (!ours.missing.isEmpty())
    text += tr(" The plan lacks: %1.").arg(ours.missing.join(QStringLiteral(", ")));
  showMaps(std::move(ours), std::move(reference), text);
}

void LayoutMapView::setLiveLayout(const protocol::LayoutEvent& layout) {
  live_ = layout;
  showLive();
}

void LayoutMapView::setLivePlan(const app::Plan& plan) {
  livePlan_ = plan;
  livePlanError_.clear();
  showLive();
}

void LayoutMapView::setLivePlanError(const QString& error) {
  livePlan_.reset();
  livePlanError_ = error;
  showLive();
}

void LayoutMapView::showLive() {
  const int oursIndex = livePlan_ ? oursFor(*livePlan_, QString()) : -1;
  if (oursIndex < 0) {
    if (!live_) {
      showMaps(app::LayoutMap{}, std::nullopt,
               tr("Planning the run's config.yaml; waiting for its layout event."));
      return;
    }
    app::LayoutMap map = app::layoutMapFromLayoutEvent(*live_);
    QString text = tr("The run's layout event (%1 units). It does not carry: %2.")
                       .arg(map.units.size())
                       .arg(map.missing.join(QStringLiteral(", ")));
    if (!livePlanError_.isEmpty())
      text += tr(" The plan of its config.yaml failed: %1").arg(livePlanError_);
    else if (livePlan_)
      text += tr(" The plan of its config.yaml has no estimate of ours.");
    else
      text += tr(" Planning its config.yaml for the rest\u2026");
    showMaps(std::move(map), std::nullopt, text);
    return;
  }
  const app::Plan& plan = *livePlan_;
  app::LayoutMap planned = app::layoutMapFromPlan(plan, oursIndex);
  const int ref = app::referenceEstimateFor(plan, oursIndex);
  std::optional<app::LayoutMap> reference;
  if (ref >= 0) reference = app::layoutMapFromPlan(plan, ref);
  if (!live_) {
    showMaps(std::move(planned), std::move(reference),
             tr("The plan of the run's config.yaml (%1 ranks); waiting for the run's layout event.")
                 .arg(plan.world));
    return;
  }
  app::LiveOverlay overlay = app::overlayLiveLayout(planned, *live_);
  QString text = tr("The run's layout event over the plan of its config.yaml (%1, %2 ranks, %3 units): ")
                     .arg(planned.strategy + QStringLiteral(" / ") + planned.policy)
                     .arg(overlay.map.world)
                     .arg(overlay.map.units.size());
  text += overlay.disagreements.empty()
              ? tr("the plan and the run agree unit for unit.")
              : tr("%n disagreement(s) between the plan and the run, outlined and listed.", nullptr,
                   int(overlay.disagreements.size()));
  if (!reference) text += tr(" The plan has no reference layout.");
  showMaps(std::move(overlay.map), std::move(reference), text, std::move(overlay.disagreements));
}

void LayoutMapView::showMaps(app::LayoutMap ours, std::optional<app::LayoutMap> reference,
                             const QString& headerText, std::vector<app::LayoutDifference> first) {
  differences_ = reference ? app::diffLayouts(ours, *reference) : std::vector<app::LayoutDifference>{};
  std::stable_partition(differences_.begin(), differences_.end(), outlined);
  differences_.insert(differences_.begin(), first.begin(), first.end());
  const QSet<QString> marked = pathsOf(differences_);
  ours_->setMap(std::move(ours));
  ours_->setMarked(marked);
  reference_->setVisible(reference.has_value());
  reference_->setMap(reference ? std::move(*reference) : app::LayoutMap{});
  reference_->setMarked(marked);
  header_->setText(headerText);
  diffs_->clear();
  for (const auto& d : differences_) {
    auto* item = new QListWidgetItem(d.text, diffs_);
    item->setData(kPathRole, d.path);
    if (outlined(d)) item->setForeground(QColor(183, 28, 28));
  }
  diffs_->setVisible(!differences_.empty());
  exportPng_->setEnabled(!ours_->map().empty());
  exportSvg_->setEnabled(!ours_->map().empty());
  fillTree();
  fillRanks();
  selected_.reset();
  showSelected();
}

void LayoutMapView::fillTree() {
  tree_->clear();
  const app::LayoutMap& map = ours_->map();
  if (map.empty()) return;
  std::function<void(const app::ModuleNode&, QTreeWidgetItem*)> add = [&](const app::ModuleNode& n,
                                                                          QTreeWidgetItem* parent) {
    auto* item = parent == nullptr ? new QTreeWidgetItem(tree_) : new QTreeWidgetItem(parent);
    item->setText(0, n.name.isEmpty() ? tr("(model)") : n.name);
    item->setText(1, formatBytes(n.bytes));
    if (n.owner >= 0) item->setData(0, kPathRole, map.units[size_t(n.owner)].path);
    if (n.unit >= 0) {  // a unit boundary
      const auto& unit = map.units[size_t(n.unit)];
      item->setText(2, tr("unit %1").arg(unit.gatherOrder));
      QFont bold = item->font(0);
      bold.setBold(true);
      item->setFont(0, bold);
      item->setBackground(2, unitColour(unit.path, unit.trainable));
    }
    for (const auto& c : n.children) add(c, item);
  };
  add(app::moduleTree(map), nullptr);
  tree_->expandToDepth(1);
}

void LayoutMapView::fillRanks() {
  const auto ours = ours_->map().rankBytes();
  const bool withRef = reference_->isVisibleTo(this) && !reference_->map().empty();
  const auto ref = withRef ? reference_->map().rankBytes() : std::vector<std::int64_t>{};
  ranks_->clear();
  ranks_->setColumnCount(withRef ? 3 : 2);
  ranks_->setHorizontalHeaderLabels(withRef
                                        ? QStringList{tr("Rank"), tr("Shard bytes (ours)"), tr("Reference")}
                                        : QStringList{tr("Rank"), tr("Shard bytes")});
  ranks_->setRowCount(int(ours.size()));
  for (size_t r = 0; r < ours.size(); ++r) {
    ranks_->setItem(int(r), 0, new QTableWidgetItem(QString::number(r)));
    ranks_->setItem(int(r), 1, new QTableWidgetItem(formatBytes(ours[r])));
    if (withRef && r < ref.size()) ranks_->setItem(int(r), 2, new QTableWidgetItem(formatBytes(ref[r])));
  }
}

void LayoutMapView::selectUnit(const QString& path) {
  selected_ = path;
  showSelected();
}

void LayoutMapView::showSelected() {
  ours_->setSelectedPath(selected_);
  reference_->setSelectedPath(selected_);
  params_->clear();
  if (!selected_) {
    details_->setText(tr("Click a unit to list its parameters."));
    return;
  }
  const app::LayoutMap& map = ours_->map();
  int u = map.unitIndex(*selected_);
  const app::LayoutMap* side = &map;
  if (u < 0) {  // only in the reference
    side = &reference_->map();
    u = side->unitIndex(*selected_);
  }
  if (u < 0) {
    details_->setText(tr("%1: no such unit").arg(*selected_));
    return;
  }
  const app::MapUnit& unit = side->units[size_t(u)];
  QStringList lines;
  lines << tr("<b>%1</b> (%2, unit %3 in gather order, %4)")
               .arg(unit.label().toHtmlEscaped(),
                    unit.moduleType.isEmpty() ? tr("type unknown") : unit.moduleType)
               .arg(unit.gatherOrder)
               .arg(side->engine);
  lines << tr("%1, %2 elements (%3 frozen), %4 stored as %5")
               .arg(unit.params.size() == 1 ? tr("1 parameter") : tr("%1 parameters").arg(unit.params.size()))
               .arg(formatCount(unit.paramCount), formatCount(unit.frozenParams), formatBytes(unit.bytes()),
                    unit.dtype);
  lines << (unit.gatheredBytes >= 0 ? tr("gathered: %1").arg(formatBytes(unit.gatheredBytes))
                                    : tr("gathered size: not known here"));
  lines << (unit.peakBytes >= 0 ? tr("peaks %1 (step walk): %2 gathered + activations")
                                      .arg(phaseText(unit.peakPhase), formatBytes(unit.peakBytes))
                                : tr("step-walk peak: not known here"));
  if (!unit.aliases.isEmpty())
    lines << tr("also holds the tied %1").arg(unit.aliases.join(QStringLiteral(", ")));
  for (const auto& d : differences_) {
    if (d.path == unit.path)
      lines << QStringLiteral("<span style='color:#b71c1c'>%1</span>").arg(d.text.toHtmlEscaped());
  }
  details_->setText(lines.join(QStringLiteral("<br>")));
  for (const auto& p : unit.params) {
    auto* item = new QTreeWidgetItem(params_);
    item->setText(0, p.name);
    item->setText(1, formatInteger(p.numel));
    item->setText(2, formatBytes(p.bytes));
    item->setText(3, p.trainable ? tr("yes") : tr("frozen"));
  }
}

void LayoutMapView::paintMaps(QPainter& p, const QSize& size) const {
  QPainterPath background;
  background.addRect(QRectF(QPointF(0, 0), QSizeF(size)));
  p.fillPath(background, Qt::white);
  const bool withRef = !reference_->map().empty();
  const double h = size.height() - kLegendHeight;
  const double w = withRef ? (size.width() - 8) / 2.0 : size.width();
  LayoutTreemapWidget::paintMap(p, QRectF(0, 0, w, h), ours_->map(), pathsOf(differences_), selected_);
  if (withRef)
    LayoutTreemapWidget::paintMap(p, QRectF(w + 8, 0, w, h), reference_->map(), pathsOf(differences_),
                                  selected_);
  LayoutTreemapWidget::paintLegend(p, QRectF(0, h, size.width(), kLegendHeight));
}

QByteArray LayoutMapView::renderPng(const QSize& size) const {
  QImage image(size, QImage::Format_ARGB32);
  image.fill(Qt::white);
  {
    QPainter p(&image);
    paintMaps(p, size);
  }
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  image.save(&buffer, "PNG");
  return bytes;
}

QByteArray LayoutMapView::renderSvg(const QSize& size) const {
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  QSvgGenerator svg;
  svg.setOutputDevice(&buffer);
  svg.setSize(size);
  svg.setViewBox(QRect(QPoint(0, 0), size));
  svg.setTitle(tr("FSDP unit layout"));
  svg.setDescription(ours_->map().title());
  {
    QPainter p(&svg);
    paintMaps(p, size);
  }
  return bytes;
}

QFuture<QString> LayoutMapView::exportImage(const QString& path) {
  QSize size(ours_->width() + (reference_->isVisibleTo(this) ? reference_->width() + 8 : 0),
             std::max(ours_->height(), 200) + int(kLegendHeight));
  if (!isVisible() || size.width() < 400) size = QSize(1400, 800);
  const QByteArray bytes =
      path.endsWith(QLatin1String(".svg"), Qt::CaseInsensitive) ? renderSvg(size) : renderPng(size);
  return writeFileAsync(path, [bytes] { return bytes; });
}

void LayoutMapView::exportWithDialog(const QString& suffix) {
  const QString filter = suffix == QLatin1String("svg") ? tr("SVG (*.svg)") : tr("PNG (*.png)");
  QString path = QFileDialog::getSaveFileName(this, tr("Export layout map"),
                                              QStringLiteral("layout-map.") + suffix, filter);
  if (path.isEmpty()) return;
  if (!path.endsWith(QLatin1Char('.') + suffix, Qt::CaseInsensitive)) path += QLatin1Char('.') + suffix;
  auto* watcher = new QFutureWatcher<QString>(this);
  connect(watcher, &QFutureWatcher<QString>::finished, this, [this, watcher, path] {
    const QString error = watcher->result();
    watcher->deleteLater();
    if (!error.isEmpty()) header_->setText(error);
    emit exported(path, error);
  });
  watcher->setFuture(exportImage(path));
}

}  // namespace fs::ui
