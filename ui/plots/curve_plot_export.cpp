// CurvePlot's exports: PNG / SVG / PDF of the plot, CSV of every point.
#include <qcustomplot.h>

#include <QBuffer>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QPageSize>
#include <QPdfWriter>
#include <QSvgGenerator>

#include "ui/plots/curve_csv.h"
#include "ui/plots/curve_plot.h"
#include "ui/plots/curve_plot_curve.h"
#include "ui/plots/file_export.h"

namespace fs::ui {
namespace {

// Draws the plot as vectors (no cached pixmaps) at size on `device`.
void paintVector(QCustomPlot* plot, QPaintDevice* device, QSize size) {
  QCPPainter painter;
  painter.begin(device);
  painter.setMode(QCPPainter::pmVectorized);
  painter.setMode(QCPPainter::pmNoCaching);
  plot->toPainter(&painter, size.width(), size.height());
  painter.end();
}

// Lays the plot out for a viewport (what QCustomPlot's protected
// updateLayout does), so the axis rect's width is the export's.
void layOut(QCustomPlot* plot, const QRect& viewport) {
  plot->setViewport(viewport);
  for (auto phase :
       {QCPLayoutElement::upPreparation, QCPLayoutElement::upMargins, QCPLayoutElement::upLayout})
    plot->plotLayout()->update(phase);
}

}  // namespace

bool CurvePlot::formatForPath(const QString& path, PlotExportFormat* format) {
  const QString suffix = QFileInfo(path).suffix().toLower();
  if (suffix == QLatin1String("png"))
    *format = PlotExportFormat::kPng;
  else if (suffix == QLatin1String("svg"))
    *format = PlotExportFormat::kSvg;
  else if (suffix == QLatin1String("pdf"))
    *format = PlotExportFormat::kPdf;
  else if (suffix == QLatin1String("csv"))
    *format = PlotExportFormat::kCsv;
  else
    return false;
  return true;
}

std::vector<CsvCurve> CurvePlot::csvCurves() const {
  std::vector<CsvCurve> columns;
  for (const auto& c : curves_) {
    const CurveSpans data = c->series.raw();
    const std::size_t n = data.size();
    columns.push_back(
        {c->name.toStdString(), {data.x.begin(), data.x.begin() + n}, {data.y.begin(), data.y.begin() + n}});
  }
  return columns;
}

std::string CurvePlot::csvXHeader() const {
  return plot_->xAxis->label().isEmpty() ? std::string("x") : plot_->xAxis->label().toStdString();
}

std::string CurvePlot::csvText() const {
  return curvesToCsv(csvXHeader(), csvCurves());
}

QByteArray CurvePlot::render(PlotExportFormat format, QSize size) {
  flush();  // export what is there now, not what was there at the last tick
  if (size.isEmpty()) size = plot_->size().isEmpty() ? QSize(1200, 600) : plot_->size();
  // One bucket per pixel column of the export, not of the screen.
  const QRect screen = plot_->viewport();
  if (format != PlotExportFormat::kCsv) {
    layOut(plot_, QRect(QPoint(0, 0), size));
    rebucket();
  }
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  switch (format) {
    case PlotExportFormat::kPng:
      plot_->toPixmap(size.width(), size.height()).save(&buffer, "PNG");
      break;
    case PlotExportFormat::kSvg: {
      QSvgGenerator svg;
      svg.setOutputDevice(&buffer);
      svg.setSize(size);
      svg.setViewBox(QRect(QPoint(0, 0), size));
      svg.setTitle(plot_->yAxis->label());
      paintVector(plot_, &svg, size);
      break;
    }
    case PlotExportFormat::kPdf: {
      // What QCustomPlot::savePdf does, but into memory so the write can
      // leave the GUI thread: one page of size points, drawn 1 pixel = 1 pt.
      QPdfWriter pdf(&buffer);
      pdf.setCreator(QStringLiteral("Flamingo Studio"));
      pdf.setTitle(plot_->yAxis->label());
      pdf.setResolution(72);
      pdf.setPageSize(QPageSize(QSizeF(size), QPageSize::Point, QString(), QPageSize::ExactMatch));
      pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
      paintVector(plot_, &pdf, size);
      break;
    }
    case PlotExportFormat::kCsv: {
      const std::string text = csvText();
      bytes = QByteArray(text.data(), qsizetype(text.size()));
      break;
    }
  }
  if (format != PlotExportFormat::kCsv) {
    layOut(plot_, screen);
    rebucket();
  }
  return bytes;
}

void CurvePlot::exportTo(const QString& path, PlotExportFormat format, QSize size) {
  std::function<QByteArray()> produce;
  if (format == PlotExportFormat::kCsv) {
    // Copy the arrays here (they belong to the GUI thread); format them there.
    produce = [x = csvXHeader(), columns = csvCurves()] {
      const std::string text = curvesToCsv(x, columns);
      return QByteArray(text.data(), qsizetype(text.size()));
    };
  } else {
    produce = [bytes = render(format, size)] { return bytes; };
  }
  auto* watcher = new QFutureWatcher<QString>(this);
  connect(watcher, &QFutureWatcher<QString>::finished, this, [this, watcher, path] {
    emit exportFinished(path, watcher->result());
    watcher->deleteLater();
  });
  watcher->setFuture(writeFileAsync(path, std::move(produce)));
}

}  // namespace fs::ui
