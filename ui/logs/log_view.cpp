#include "ui/logs/log_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListView>
#include <QScrollBar>
#include <QTimer>
#include <QVBoxLayout>

namespace fs::ui {
namespace {

constexpr int kFlushMs = 50;
constexpr int kTextDebounceMs = 150;  // refiltering 200k lines on every key press lags

}  // namespace

LogView::LogView(QWidget* parent)
    : QWidget(parent),
      model_(new LogModel(this)),
      filter_(new LogFilter(this)),
      list_(new QListView),
      rank_(new QComboBox),
      text_(new QLineEdit),
      count_(new QLabel),
      flush_timer_(new QTimer(this)),
      text_timer_(new QTimer(this)) {
  setObjectName(QStringLiteral("logView"));
  filter_->setSourceModel(model_);
  filter_->setDynamicSortFilter(true);
  list_->setModel(filter_);
  list_->setUniformItemSizes(true);  // row heights are not measured per line
  list_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  list_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  list_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  list_->setWordWrap(false);

  rank_->setObjectName(QStringLiteral("logRank"));
  rank_->addItem(tr("All ranks"), QVariant());
  connect(rank_, &QComboBox::currentIndexChanged, this, [this](int index) {
    const QVariant rank = rank_->itemData(index);
    filter_->setRank(rank.isValid() ? std::optional<int>(rank.toInt()) : std::nullopt);
    updateCount();
  });
  connect(model_, &LogModel::rankSeen, this, &LogView::addRank);

  static const char* const kLevelNames[] = {"Info", "Warnings", "Errors"};
  auto* controls = new QHBoxLayout;
  controls->addWidget(rank_);
  for (int level = 0; level < 3; ++level) {
    levels_[level] = new QCheckBox(tr(kLevelNames[level]));
    levels_[level]->setChecked(true);
    connect(levels_[level], &QCheckBox::toggled, this, [this, level](bool on) {
      filter_->setLevelShown(LogLevel(level), on);
      updateCount();
    });
    controls->addWidget(levels_[level]);
  }
  text_->setObjectName(QStringLiteral("logText"));
  text_->setPlaceholderText(tr("Filter text"));
  text_->setClearButtonEnabled(true);
  controls->addWidget(text_, 1);
  controls->addWidget(count_);

  text_timer_->setSingleShot(true);
  text_timer_->setInterval(kTextDebounceMs);
  connect(text_, &QLineEdit::textChanged, text_timer_, qOverload<>(&QTimer::start));
  connect(text_timer_, &QTimer::timeout, this, [this] {
    filter_->setText(text_->text());
    updateCount();
  });

  flush_timer_->setSingleShot(true);
  flush_timer_->setInterval(kFlushMs);
  connect(flush_timer_, &QTimer::timeout, this, &LogView::flush);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(controls);
  layout->addWidget(list_, 1);
  updateCount();
}

void LogView::appendLine(LogLine line) {
  pending_.push_back(std::move(line));
  if (!flush_timer_->isActive()) flush_timer_->start();
}

void LogView::appendLines(std::vector<LogLine> lines) {
  if (pending_.empty())
    pending_ = std::move(lines);
  else
    pending_.insert(pending_.end(), std::make_move_iterator(lines.begin()),
                    std::make_move_iterator(lines.end()));
  if (!pending_.empty() && !flush_timer_->isActive()) flush_timer_->start();
}

void LogView::flush() {
  flush_timer_->stop();
  if (pending_.empty()) return;
  QScrollBar* bar = list_->verticalScrollBar();
  const bool at_bottom = bar->value() >= bar->maximum();
  model_->append(std::move(pending_));
  pending_.clear();
  if (at_bottom) list_->scrollToBottom();
  updateCount();
}

void LogView::clear() {
  pending_.clear();
  model_->clear();
  while (rank_->count() > 1) rank_->removeItem(1);
  updateCount();
}

void LogView::addRank(int rank) {
  if (rank_->findData(rank) >= 0) return;
  // Keep the ranks in order whatever order they first speak in.
  int at = 1;
  while (at < rank_->count() && rank_->itemData(at).toInt() < rank) ++at;
  rank_->insertItem(at, tr("Rank %1").arg(rank), rank);
}

void LogView::setRankFilter(std::optional<int> rank) {
  if (!rank) {
    rank_->setCurrentIndex(0);
    return;
  }
  int index = rank_->findData(*rank);
  if (index < 0) {
    addRank(*rank);
    index = rank_->findData(*rank);
  }
  rank_->setCurrentIndex(index);
}

void LogView::setLevelShown(LogLevel level, bool shown) {
  levels_[int(level)]->setChecked(shown);
}

void LogView::setTextFilter(const QString& text) {
  text_->setText(text);
  text_timer_->stop();
  filter_->setText(text);
  updateCount();
}

int LogView::shownCount() const {
  return filter_->rowCount();
}
int LogView::totalCount() const {
  return model_->rowCount();
}

void LogView::updateCount() {
  count_->setText(shownCount() == totalCount() ? tr("%n line(s)", nullptr, totalCount())
                                               : tr("%1 of %2 lines").arg(shownCount()).arg(totalCount()));
}

}  // namespace fs::ui
