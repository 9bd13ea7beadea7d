#include "app/monitor/series_store.h"

#include <algorithm>
#include <cmath>
#include <limits>

// NOTE [Series x axes]
// Every series (named as in NOTE [Series names], series_names.h) is a list of points
// appended in file order. y is one std::vector<double>; each point also knows its x in
// every x-axis kind, through the row of the event it came from:
//   kStep          the event's step
//   kSamples       cumulative samples seen of `dataset` (empty: all datasets summed)
//   kTokens        cumulative tokens seen of `dataset` (empty: all datasets summed)
//   kWallTime      the event's time, unix seconds
//   kRelativeTime  seconds since the first event the store saw (the run's start when
//                  the file was read from its beginning)
// An event that reports no samples (tokens) for a dataset keeps that dataset's last
// value; before any, it is 0. x(id, axis) returns an array as long as y(id): built on
// first request for that axis, then extended as points arrive, so asking is cheap.
// Within a run x is non-decreasing on every axis.
//
// NOTE [Rewinds]
// A run resumed from a checkpoint appends to the same events.jsonl and repeats the steps
// after the checkpoint. When a step event arrives whose step is not above the last step
// event's, every point at that step or later is dropped from every series before the new
// points are appended (as TensorBoard purges orphaned steps), and reset() is emitted:
// the curves show the attempt that counts, and x never goes backwards.
// A rollback of the loss-spike guard (the `rollback` event) does the same: the steps
// after its to_step repeat. The dropped points are not lost: each rewind moves them,
// per series, into one abandoned segment (abandonedY / abandonedX, on every x axis
// through their rows, which the row table keeps), so a plot draws them dimmed beside
// the curve that counts.

namespace fs::app {

SeriesStore::SeriesStore(QObject* parent) : QObject(parent) {}
SeriesStore::~SeriesStore() = default;

SeriesStore::SeriesId SeriesStore::find(std::string_view name) const {
  auto it = ids_.find(std::string(name));
  return it == ids_.end() ? kNoSeries : it->second;
}

std::size_t SeriesStore::size(SeriesId id) const {
  return series_[id].y.size();
}

std::size_t SeriesStore::totalPoints() const {
  std::size_t n = 0;
  for (const Series& s : series_) n += s.y.size();
  return n;
}

std::span<const double> SeriesStore::y(SeriesId id) const {
  return series_[id].y;
}

std::span<const double> SeriesStore::y(std::string_view name) const {
  const SeriesId id = find(name);
  return id == kNoSeries ? std::span<const double>() : y(id);
}

std::span<const double> SeriesStore::x(std::string_view name, const XAxis& axis) const {
  const SeriesId id = find(name);
  return id == kNoSeries ? std::span<const double>() : x(id, axis);
}

std::span<const double> SeriesStore::x(SeriesId id, const XAxis& axis) const {
  return xOf(series_[id], axis);
}

std::span<const double> SeriesStore::abandonedY(SeriesId id, std::size_t k) const {
  return series_[id].abandoned[k].y;
}

std::span<const double> SeriesStore::abandonedX(SeriesId id, std::size_t k, const XAxis& axis) const {
  return xOf(series_[id].abandoned[k], axis);
}

std::span<const double> SeriesStore::xOf(Series& s, const XAxis& axis) const {
  auto it = std::find_if(s.caches.begin(), s.caches.end(), [&](const XCache& c) { return c.axis == axis; });
  if (it == s.caches.end()) {
    s.caches.push_back({axis, {}});
    it = s.caches.end() - 1;
  }
  std::vector<double>& values = it->values;
  values.reserve(s.rows.size());
  for (std::size_t i = values.size(); i < s.rows.size(); ++i) values.push_back(xAt(s.rows[i], axis));
  return values;
}

double SeriesStore::xAt(std::uint32_t row, const XAxis& axis) const {
  switch (axis.kind) {
    case XKind::kStep:
      return row_step_[row];
    case XKind::kWallTime:
      return static_cast<double>(row_t_ms_[row]) / 1000.0;
    case XKind::kRelativeTime:  // from integer ms, so 3600 ms after the start is exactly 3.6
      return static_cast<double>(row_t_ms_[row] - first_event_ms_.value_or(0)) / 1000.0;
    case XKind::kSamples:
    case XKind::kTokens: {
      const auto& columns = axis.kind == XKind::kSamples ? row_samples_ : row_tokens_;
      if (!axis.dataset.empty()) {
        for (std::size_t d = 0; d < datasets_.size(); ++d) {
          if (datasets_[d] == axis.dataset) return columns[d][row];
        }
        return 0;  // a dataset never reported has seen nothing
      }
      double sum = 0;
      for (const auto& c : columns) sum += c[row];
      return sum;
    }
  }
  return 0;
}

int SeriesStore::datasetColumn(const std::string& name) {
  for (std::size_t d = 0; d < datasets_.size(); ++d) {
    if (datasets_[d] == name) return static_cast<int>(d);
  }
  datasets_.push_back(name);
  row_samples_.emplace_back(row_step_.size(), 0.0);
  row_tokens_.emplace_back(row_step_.size(), 0.0);
  return static_cast<int>(datasets_.size() - 1);
}

void SeriesStore::reserveFor(const SeriesBatch& batch) {
  const std::size_t batch_rows = batch.rows.size();
  if (batch.rows_hint == 0 || batch_rows == 0) return;
  auto grow = [](auto& v, std::size_t adding, std::size_t later) {
    if (v.capacity() < v.size() + adding) v.reserve(v.size() + adding + later);
  };
  grow(row_step_, batch_rows, batch.rows_hint);
  grow(row_t_ms_, batch_rows, batch.rows_hint);
  for (auto& c : row_samples_) grow(c, batch_rows, batch.rows_hint);
  for (auto& c : row_tokens_) grow(c, batch_rows, batch.rows_hint);
  for (const auto& p : batch.series) {
    auto it = ids_.find(p.name);
    if (it == ids_.end()) continue;
    Series& s = series_[it->second];
    // As many points per row later as in this batch.
    const std::size_t later =
        static_cast<std::size_t>(static_cast<double>(p.y.size()) / batch_rows * batch.rows_hint);
    grow(s.y, p.y.size(), later);
    grow(s.rows, p.rows.size(), later);
  }
}

void SeriesStore::appendRows(const SeriesBatch::Rows& rows) {
  // Columns of datasets new in this batch first: they hold 0 for every earlier row.
  std::vector<int> columns;
  for (const std::string& name : rows.datasets) columns.push_back(datasetColumn(name));
  const std::size_t base = row_step_.size();
  row_step_.insert(row_step_.end(), rows.step.begin(), rows.step.end());
  row_t_ms_.insert(row_t_ms_.end(), rows.t_ms.begin(), rows.t_ms.end());

  std::vector<bool> filled(datasets_.size(), false);
  auto carry = [&](std::vector<double>& column, const std::vector<double>* source) {
    column.reserve(base + rows.size());
    double last = column.empty() ? 0.0 : column.back();
    for (std::size_t r = 0; r < rows.size(); ++r) {
      if (source != nullptr && !std::isnan((*source)[r])) last = (*source)[r];
      column.push_back(last);
    }
  };
  for (std::size_t c = 0; c < rows.datasets.size(); ++c) {
    const int d = columns[c];
    carry(row_samples_[d], &rows.samples[c]);
    carry(row_tokens_[d], &rows.tokens[c]);
    filled[d] = true;
  }
  for (std::size_t d = 0; d < datasets_.size(); ++d) {
    if (filled[d]) continue;
    carry(row_samples_[d], nullptr);
    carry(row_tokens_[d], nullptr);
  }
}

SeriesStore::SeriesId SeriesStore::findOrAdd(const std::string& name, bool* added) {
  auto [it, inserted] = ids_.try_emplace(name, static_cast<SeriesId>(names_.size()));
  if (inserted) {
    names_.push_back(name);
    series_.emplace_back();
    *added = true;
  }
  return it->second;
}

void SeriesStore::appendPoints(Series& s, const SeriesBatch::Points& p, std::size_t* cursor,
                               std::uint32_t rowEnd, std::uint32_t rowBase) {
  const std::size_t begin = *cursor;
  std::size_t end = begin;
  while (end < p.rows.size() && p.rows[end] < rowEnd) ++end;
  s.y.insert(s.y.end(), p.y.begin() + static_cast<std::ptrdiff_t>(begin),
             p.y.begin() + static_cast<std::ptrdiff_t>(end));
  s.rows.reserve(s.rows.size() + (end - begin));
  for (std::size_t i = begin; i < end; ++i) s.rows.push_back(p.rows[i] + rowBase);
  *cursor = end;
}

void SeriesStore::rewindTo(double step) {
  for (Series& s : series_) {
    std::size_t n = s.rows.size();
    while (n > 0 && row_step_[s.rows[n - 1]] >= step) --n;
    if (n < s.rows.size()) {
      Series cut;
      cut.rows.assign(s.rows.begin() + static_cast<std::ptrdiff_t>(n), s.rows.end());
      cut.y.assign(s.y.begin() + static_cast<std::ptrdiff_t>(n), s.y.end());
      s.abandoned.push_back(std::move(cut));
    }
    s.rows.resize(n);
    s.y.resize(n);
    for (XCache& c : s.caches) {
      if (c.values.size() > n) c.values.resize(n);
    }
  }
}

void SeriesStore::append(const SeriesBatch& batch) {
  if (!first_event_ms_ && batch.first_event_ms) first_event_ms_ = batch.first_event_ms;
  const auto row_base = static_cast<std::uint32_t>(row_step_.size());

  // NOTE [Rewinds]: where in this batch a step event goes back.
  std::vector<std::pair<std::uint32_t, double>> rewinds;
  for (std::size_t r = 0; r < batch.rows.size(); ++r) {
    if (batch.rows.from_step[r] == 0) continue;
    const double step = batch.rows.step[r];
    if (last_step_event_step_ && step <= *last_step_event_step_)
      rewinds.emplace_back(static_cast<std::uint32_t>(r), step);
    last_step_event_step_ = step;
  }
  std::vector<SeriesId> ids(batch.series.size());
  std::vector<QString> added;
  for (std::size_t k = 0; k < batch.series.size(); ++k) {
    bool is_new = false;
    ids[k] = findOrAdd(batch.series[k].name, &is_new);
    if (is_new) added.push_back(QString::fromStdString(batch.series[k].name));
  }
  reserveFor(batch);
  appendRows(batch.rows);
  std::vector<std::size_t> cursors(batch.series.size(), 0);
  auto appendUpTo = [&](std::uint32_t row_end) {
    for (std::size_t k = 0; k < batch.series.size(); ++k)
      appendPoints(series_[ids[k]], batch.series[k], &cursors[k], row_end, row_base);
  };
  for (const auto& [row, step] : rewinds) {
    appendUpTo(row);
    rewindTo(step);
  }
  appendUpTo(std::numeric_limits<std::uint32_t>::max());

  for (const QString& name : added) emit seriesAdded(name);
  if (!rewinds.empty()) emit reset();
  if (!batch.series.empty() || batch.rows.size() > 0) emit changed();
}

void SeriesStore::clear() {
  names_.clear();
  ids_.clear();
  series_.clear();
  row_step_.clear();
  row_t_ms_.clear();
  datasets_.clear();
  row_samples_.clear();
  row_tokens_.clear();
  first_event_ms_.reset();
  last_step_event_step_.reset();
  emit reset();
}

}  // namespace fs::app
