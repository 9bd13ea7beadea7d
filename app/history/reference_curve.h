// ReferenceCurve: curves imported from a CSV file (e.g. a published loss
// curve, or another tool's export) to overlay on a run's plot.
//
// Accepted input:
//  - a header row naming the columns (`step,laion_loss,mmc4_loss`), then one
//    row of numbers per point. One column is x (chosen by name; default the
//    first), one or more are y (default: every other column), one curve per
//    y column. An empty y cell means "no point here" for that curve (exports
//    of runs that log some metrics less often have them); x cells must hold
//    a finite number.
//  - no header: exactly two columns, x and y.
// Fields are comma-separated and may be double-quoted; blank lines, '\r'
// and a UTF-8 byte-order mark are ignored. x must not decrease from one row
// to the next. Every error names the source, and the line and column where
// there is one: "ref.csv line 7, column 2 ('loss'): 'abc' is not a number".
//
// Thread-safety: pure functions; loadReferenceCurves reads a file, so call
// it off the GUI thread (HistoryWorker::importReferenceCurves).
#pragma once

#include <QByteArray>
#include <QList>
#include <QMetaType>
#include <QString>
#include <QStringList>
#include <vector>

#include "backend/protocol/status.h"

namespace fs::app {

struct ReferenceCurveOptions {
  QString xColumn;       // header name; empty: the first column
  QStringList yColumns;  // header names; empty: every column but x
};

struct ReferenceCurve {
  QString name;  // the y column's header name ("y" without a header)
  std::vector<double> x;
  std::vector<double> y;  // same length as x; may hold NaN / inf (a diverged loss)
};

struct ReferenceCurveSet {
  QString source;                // as given: the file path
  QString xName;                 // the x column's name ("x" without a header)
  QStringList columns;           // every header name, in file order (empty without a header)
  QList<ReferenceCurve> curves;  // one per y column, in the order asked
};

protocol::StatusOr<ReferenceCurveSet> parseReferenceCurves(const QByteArray& text, const QString& source,
                                                           const ReferenceCurveOptions& options = {});
// Reads `path` (up to 256 MiB) and parses it.
protocol::StatusOr<ReferenceCurveSet> loadReferenceCurves(const QString& path,
                                                          const ReferenceCurveOptions& options = {});

// A load's result as HistoryWorker reports it: curves, or the error.
struct ReferenceCurveImport {
  QString path;
  ReferenceCurveSet curves;
  QString error;  // empty when it loaded
};

}  // namespace fs::app

Q_DECLARE_METATYPE(fs::app::ReferenceCurveOptions)
Q_DECLARE_METATYPE(fs::app::ReferenceCurveImport)
