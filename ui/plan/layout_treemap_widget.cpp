#include "ui/plan/layout_treemap_widget.h"

#include <QFontMetricsF>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>

#include "ui/plots/format_units.h"

namespace fs::ui {
namespace {

constexpr double kTitleHeight = 22;
constexpr double kInset = 3;

// FNV-1a: a hue that does not depend on Qt's hash seed.
int hueOf(const QString& path) {
  if (path.isEmpty()) return -1;
  std::uint32_t h = 2166136261u;
  for (const QChar c : path) {
    h ^= c.unicode();
    h *= 16777619u;
  }
  return static_cast<int>(h % 360);
}

// "layer 3", "xattn 3", "wte": a unit's name short enough for its rectangle.
QString shortLabel(const QString& path) {
  if (path.isEmpty()) return QStringLiteral("(root)");
  const QStringList parts = path.split(QLatin1Char('.'));
  QString index;
  for (const auto& part : parts) {
    bool number = false;
    part.toInt(&number);
    if (number) index = part;
  }
  QString name = parts.last();
  if (name == QLatin1String("decoder_layer")) name = QStringLiteral("layer");
  if (name == QLatin1String("gated_cross_attn_layer")) name = QStringLiteral("xattn");
  bool lastIsNumber = false;
  parts.last().toInt(&lastIsNumber);
  if (lastIsNumber && parts.size() > 1) name = parts[parts.size() - 2];
  return index.isEmpty() ? name : name + QLatin1Char(' ') + index;
}

void stroke(QPainter& p, const QRectF& r, const QPen& pen) {
  QPainterPath path;
  path.addRect(r);
  p.strokePath(path, pen);
}

}  // namespace

QColor unitColour(const QString& path, bool trainable) {
  const int hue = hueOf(path);
  if (hue < 0) return trainable ? QColor(150, 150, 150) : QColor(215, 215, 215);
  return trainable ? QColor::fromHsv(hue, 170, 225) : QColor::fromHsv(hue, 45, 240);
}

LayoutTreemapWidget::LayoutTreemapWidget(QWidget* parent) : QWidget(parent) {
  setMouseTracking(false);
  setCursor(Qt::PointingHandCursor);
}

void LayoutTreemapWidget::setMap(app::LayoutMap map) {
  map_ = std::move(map);
  update();
}

void LayoutTreemapWidget::setMarked(QSet<QString> paths) {
  marked_ = std::move(paths);
  update();
}

void LayoutTreemapWidget::setSelectedPath(std::optional<QString> path) {
  selected_ = std::move(path);
  update();
}

app::Treemap LayoutTreemapWidget::treemap() const {
  return app::layoutTreemap(map_, QRectF(rect()).adjusted(0, kTitleHeight, 0, 0), kInset);
}

app::Treemap LayoutTreemapWidget::paintMap(QPainter& p, const QRectF& bounds, const app::LayoutMap& map,
                                           const QSet<QString>& marked,
                                           const std::optional<QString>& selected) {
  p.save();
  p.setRenderHint(QPainter::Antialiasing, false);
  QFont titleFont = p.font();
  titleFont.setBold(true);
  p.setFont(titleFont);
  p.setPen(Qt::black);
  const QRectF titleRect(bounds.left() + 2, bounds.top(), bounds.width() - 4, kTitleHeight);
  const QString title = map.empty() ? QObject::tr("no layout")
                                    : QStringLiteral("%1 - %2 units, %3")
                                          .arg(map.title())
                                          .arg(map.units.size())
                                          .arg(formatBytes(map.bytes()));
  p.drawText(titleRect, Qt::AlignLeft | Qt::AlignVCenter,
             QFontMetricsF(titleFont).elidedText(title, Qt::ElideRight, titleRect.width()));
  const QRectF area = bounds.adjusted(0, kTitleHeight, 0, 0);
  const app::Treemap t = app::layoutTreemap(map, area, kInset);

  for (const auto& leaf : t.leaves) {
    const auto& unit = map.units[size_t(leaf.unit)];
    const auto& param = unit.params[size_t(leaf.param)];
    const QColor c = unitColour(unit.path, param.trainable);
    p.setPen(QPen(c.darker(125), 0));
    p.setBrush(c);
    p.drawRect(leaf.rect);
    if (!param.trainable) {
      QPainterPath hatch;
      hatch.addRect(leaf.rect);
      p.fillPath(hatch, QBrush(QColor(0, 0, 0, 55), Qt::BDiagPattern));
    }
  }
  QFont small = p.font();
  small.setBold(false);
  small.setPointSizeF(std::max(6.0, small.pointSizeF() * 0.85));
  p.setFont(small);
  const QFontMetricsF fm(small);
  for (size_t u = 0; u < map.units.size(); ++u) {
    const QRectF& r = t.units[u];
    if (r.isEmpty()) continue;
    const auto& unit = map.units[u];
    stroke(p, r.adjusted(0.5, 0.5, -0.5, -0.5), QPen(QColor(40, 40, 40), 1.2));
    if (marked.contains(unit.path))
      stroke(p, r.adjusted(1.5, 1.5, -1.5, -1.5), QPen(QColor(211, 47, 47), 2.2, Qt::DashLine));
    if (selected && *selected == unit.path)
      stroke(p, r.adjusted(1, 1, -1, -1), QPen(QColor(21, 101, 192), 3));
    if (r.width() > 56 && r.height() > 2 * fm.height() + 4) {
      p.setPen(Qt::black);
      const QRectF text = r.adjusted(kInset + 2, kInset + 1, -kInset - 2, -kInset - 1);
      p.drawText(text, Qt::AlignLeft | Qt::AlignTop,
                 fm.elidedText(shortLabel(unit.path), Qt::ElideLeft, text.width()) + QLatin1Char('\n') +
                     formatBytes(unit.bytes()));
    }
  }
  p.restore();
  return t;
}

void LayoutTreemapWidget::paintLegend(QPainter& p, const QRectF& bounds) {
  p.save();
  p.setRenderHint(QPainter::Antialiasing, true);
  const QFontMetricsF fm(p.font());
  double x = bounds.left() + 4;
  const double y = bounds.center().y();
  auto swatch = [&](const QColor& fill, bool hatch, const QPen& pen, const QString& text) {
    QPainterPath path;
    path.addRect(QRectF(x, y - 6, 12, 12));
    p.fillPath(path, fill);
    if (hatch) p.fillPath(path, QBrush(QColor(0, 0, 0, 55), Qt::BDiagPattern));
    p.strokePath(path, pen);
    p.setPen(Qt::black);
    p.drawText(QPointF(x + 16, y + fm.ascent() / 2 - 1), text);
    x += 16 + fm.horizontalAdvance(text) + 16;
  };
  const QColor sample = unitColour(QStringLiteral("perceiver"), true);
  swatch(sample, false, QPen(sample.darker(125), 1),
         QObject::tr("trainable (colour = FSDP unit, area = bytes)"));
  swatch(unitColour(QStringLiteral("perceiver"), false), true, QPen(sample.darker(125), 1),
         QObject::tr("frozen"));
  swatch(Qt::white, false, QPen(QColor(40, 40, 40), 1.2), QObject::tr("unit boundary"));
  swatch(Qt::white, false, QPen(QColor(211, 47, 47), 2, Qt::DashLine),
         QObject::tr("differs from the other side"));
  swatch(Qt::white, false, QPen(QColor(21, 101, 192), 2.5), QObject::tr("selected"));
  p.restore();
}

void LayoutTreemapWidget::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  paintMap(p, QRectF(rect()), map_, marked_, selected_);
}

void LayoutTreemapWidget::mousePressEvent(QMouseEvent* event) {
  const int unit = app::unitAt(treemap(), event->position());
  if (unit >= 0) emit unitClicked(map_.units[size_t(unit)].path);
  QWidget::mousePressEvent(event);
}

}  // namespace fs::ui
