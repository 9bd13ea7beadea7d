// SeriesStore: a run's time series, as contiguous arrays a plot reads without copies.
//
// Every point has its x on every axis kind; a resumed run's repeated steps
// replace the old ones. See NOTE [Series x axes] and NOTE [Rewinds] in
// series_store.cpp.
//
// Spans stay valid until the next append() or clear() (the next changed() or reset()):
// read them fresh on every redraw (ui/plots/curve_source.h).
//
// Thread-safety: GUI thread only (no locking). Ownership: holds every array by value.
#pragma once

#include <QObject>
#include <QString>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "app/monitor/series_batch.h"

namespace fs::app {

enum class XKind { kStep, kSamples, kTokens, kWallTime, kRelativeTime };

struct XAxis {
  XKind kind = XKind::kStep;
  std::string dataset;  // kSamples / kTokens only; empty = sum over datasets
  bool operator==(const XAxis&) const = default;
};

class SeriesStore : public QObject {
  Q_OBJECT
 public:
  using SeriesId = int;
  static constexpr SeriesId kNoSeries = -1;

  explicit SeriesStore(QObject* parent = nullptr);
  ~SeriesStore() override;

  // Appends a batch (see NOTE [Rewinds]); emits seriesAdded() for each new series, then
  // changed() once when anything was appended, and reset() when a rewind happened.
  void append(const SeriesBatch& batch);
  // Forgets everything (another run is being opened); emits reset().
  void clear();

  // Series names in order of first appearance; ids are indices into this list and stay
  // valid until clear().
  const std::vector<std::string>& names() const { return names_; }
  SeriesId find(std::string_view name) const;
  std::size_t size(SeriesId id) const;
  std::span<const double> y(SeriesId id) const;
  // REQUIRES: id is valid. Same length as y(id).
  std::span<const double> x(SeriesId id, const XAxis& axis) const;
  // The row (event) point i of `id` came from. Rows are numbered in arrival order and
  // never reused until clear(), so a reader that kept a point's row can tell after a
  // rewind which of the points it saw are still there. REQUIRES: i < size(id).
  std::uint32_t row(SeriesId id, std::size_t i) const { return series_[id].rows[i]; }
  // Segments of `id` cut off by rewinds (NOTE [Rewinds]), oldest first: each the points
  // a repeated step replaced, in their own order. Same span rules as y() / x().
  // REQUIRES: id is valid; k < abandonedCount(id).
  std::size_t abandonedCount(SeriesId id) const { return series_[id].abandoned.size(); }
  std::span<const double> abandonedY(SeriesId id, std::size_t k) const;
  std::span<const double> abandonedX(SeriesId id, std::size_t k, const XAxis& axis) const;

  // By name: empty spans for a series that does not exist (yet).
  std::span<const double> y(std::string_view name) const;
  std::span<const double> x(std::string_view name, const XAxis& axis) const;

  // Dataset names seen in samples / tokens figures, in order of appearance.
  const std::vector<std::string>& datasets() const { return datasets_; }
  // Events that produced points so far (rows of the x table).
  std::size_t rowCount() const { return row_step_.size(); }
  // Time of the first event seen, unix ms; the origin of kRelativeTime.
  std::optional<std::int64_t> firstEventMs() const { return first_event_ms_; }
  // Points in every series together.
  std::size_t totalPoints() const;

 signals:
  void seriesAdded(const QString& name);
  void changed();
  void reset();

 private:
  struct XCache {
    XAxis axis;
    std::vector<double> values;
  };
  struct Series {
    std::vector<double> y;
    std::vector<std::uint32_t> rows;  // into the row table
    std::vector<XCache> caches;       // materialised x arrays, by axis
    std::vector<Series> abandoned;    // NOTE [Rewinds]; never themselves rewound
  };

  std::span<const double> xOf(Series& s, const XAxis& axis) const;

  SeriesId findOrAdd(const std::string& name, bool* added);
  int datasetColumn(const std::string& name);
  void reserveFor(const SeriesBatch& batch);
  void appendRows(const SeriesBatch::Rows& rows);
  // Appends points of `p` whose batch row is below `row_end`, from *cursor on.
  void appendPoints(Series& s, const SeriesBatch::Points& p, std::size_t* cursor, std::uint32_t rowEnd,
                    std::uint32_t rowBase);
  void rewindTo(double step);
  double xAt(std::uint32_t row, const XAxis& axis) const;

  std::vector<std::string> names_;
  std::unordered_map<std::string, SeriesId> ids_;
  mutable std::vector<Series> series_;  // mutable: x caches fill on read
  std::vector<double> row_step_;
  std::vector<std::int64_t> row_t_ms_;  // event time, unix ms
  std::vector<std::string> datasets_;
  std::vector<std::vector<double>> row_samples_;  // [dataset][row], carried forward
  std::vector<std::vector<double>> row_tokens_;
  std::optional<std::int64_t> first_event_ms_;
  std::optional<double> last_step_event_step_;
};

}  // namespace fs::app
