#include "app/checkpoints/inspector_worker.h"

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <algorithm>

#include "app/checkpoints/remote_checkpoint.h"

namespace fs::app {
namespace {

QString qs(const std::string& s) {
  return QString::fromStdString(s);
}
QString qs(std::string_view s) {
  return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

// The leaves below `node` (itself included), in tree order.
void collectLeaves(const inspect::ModuleTree& tree, std::size_t node, std::vector<std::size_t>& out) {
  const inspect::ModuleNode& n = tree.nodes[node];
  if (n.tensor) out.push_back(*n.tensor);
  for (std::size_t c : n.children) collectLeaves(tree, c, out);
}

}  // namespace

CheckpointModelPtr snapshotCheckpoint(const inspect::CheckpointIndex& index) {
  auto model = std::make_shared<CheckpointModel>();
  model->path = QFile::decodeName(index.path().c_str());
  model->format = qs(inspect::formatName(index.format()));
  for (const auto& f : index.files()) model->files << QFile::decodeName(f.c_str());
  model->fileBytes = index.fileBytes();
  model->tensors = index.tensors();
  for (inspect::Section s :
       {inspect::Section::kModel, inspect::Section::kOptimizer, inspect::Section::kOther}) {
    const bool any = std::any_of(model->tensors.begin(), model->tensors.end(),
                                 [s](const inspect::TensorEntry& t) { return t.section == s; });
    if (any) model->trees.emplace_back(s, inspect::buildModuleTree(index, s));
  }
  for (const auto& w : index.warnings()) model->warnings << qs(w);
  model->hasManifest = index.manifest().has_value();
  return model;
}

namespace {

// Path, bytes and newest modification time of every file: a rewritten checkpoint gets a new stamp.
QString stampOf(const inspect::CheckpointIndex& index) {
  qint64 newest = 0;
  for (const auto& f : index.files()) {
    newest = std::max(newest, QFileInfo(QFile::decodeName(f.c_str())).lastModified().toMSecsSinceEpoch());
  }
  return QStringLiteral("%1|%2|%3")
      .arg(QFile::decodeName(index.path().c_str()))
      .arg(index.fileBytes())
      .arg(newest);
}

}  // namespace

void registerInspectorMetaTypes() {
  qRegisterMetaType<CheckpointModelPtr>();
  qRegisterMetaType<StatsTarget>();
  qRegisterMetaType<StatsResult>();
  qRegisterMetaType<HashResult>();
  qRegisterMetaType<DiffResult>();
  qRegisterMetaType<TrainingStateResult>();
  qRegisterMetaType<InspectorTask>();
  qRegisterMetaType<CheckpointListing>();
}

InspectorWorker::InspectorWorker(QObject* parent) : QObject(parent) {
  registerInspectorMetaTypes();
}

InspectorWorker::~InspectorWorker() = default;

void InspectorWorker::cancel() {
  // NOTE [Inspector cancel]: the bound first, then the flag. begin() clears the
  // flag and then reads the bound, so a cancel racing a start is never lost.
  cancelUpTo_.store(lastTicket_.load());
  cancelFlag_.store(true);
}

bool InspectorWorker::begin(quint64 ticket, InspectorTask task) {
  ticket_ = ticket;
  cancelFlag_.store(false);
  if (ticket <= cancelUpTo_.load()) {
    cancelFlag_.store(true);
    emit failed(ticket, task, QStringLiteral("%1 cancelled").arg(inspectorTaskName(task)), true);
    return false;
  }
  return true;
}

bool InspectorWorker::requireOpen(quint64 ticket, InspectorTask task) {
  if (index_) return true;
  emit failed(ticket, task, QStringLiteral("no checkpoint is open"), false);
  return false;
}

std::function<void(std::uint64_t, std::uint64_t)> InspectorWorker::progressFor(quint64 ticket,
                                                                               InspectorTask task) {
  auto last = std::make_shared<int>(-1);
  return [this, ticket, task, last](std::uint64_t done, std::uint64_t total) {
    const int step = total == 0 ? 200 : static_cast<int>(done * 200 / total);
    if (step == *last) return;
    *last = step;
    emit progress(ticket, task, done, total);
  };
}

void InspectorWorker::open(quint64 ticket, const QString& requested) {
  QString path = requested;
  // A run directory (not a checkpoint directory): its newest checkpoint, complete ones first.
  if (QFileInfo(path).isDir() && !QFileInfo::exists(QDir(path).filePath(QStringLiteral("index.json")))) {
    const CheckpointListing listing = listCheckpoints(path);
    if (listing.error.isEmpty() && !listing.checkpoints.isEmpty()) {
      emit runListed(ticket, listing);
      const QList<CheckpointOnDisk> complete = resumableCheckpoints(listing);
      path = (complete.isEmpty() ? listing.checkpoints : complete).front().path;
    }
  }
  inspect::OpenOptions options;
  options.gate = [this](const std::string&, std::uint64_t, std::uint64_t length) {
    if (!onRead_) return protocol::Status::ok();
    if (cancelFlag_.load()) return protocol::Status::cancelled("reading cancelled");
    onRead_(length);
    return protocol::Status::ok();
  };
  auto index = inspect::CheckpointIndex::open(QFile::encodeName(path).toStdString(), std::move(options));
  if (!index) {
    emit failed(ticket, InspectorTask::kOpen, qs(index.status().message()), false);
    return;
  }
  auto local = std::make_unique<inspect::CheckpointIndex>(std::move(index).value());
  CheckpointModelPtr model = snapshotCheckpoint(*local);
  QString stamp = stampOf(*local);
  remote_.reset();
  localIndex_ = std::move(local);
  index_ = localIndex_.get();
  adopt(std::move(model), std::move(stamp));
  emit opened(ticket, model_);
}

void InspectorWorker::adopt(CheckpointModelPtr model, QString stamp) {
  model_ = std::move(model);
  fileStamp_ = std::move(stamp);
}

bool InspectorWorker::wasCancelled(const protocol::Status& status) const {
  return status.code() == protocol::Status::Code::kCancelled || cancelFlag_.load();
}

void InspectorWorker::listRun(quint64 ticket, const QString& runDir) {
  CheckpointListing listing = listCheckpoints(runDir);
  if (!listing.error.isEmpty()) {
    emit failed(ticket, InspectorTask::kListRun, listing.error, false);
    return;
  }
  emit runListed(ticket, listing);
}

QString InspectorWorker::cacheKey(const StatsTarget& target) const {
  return fileStamp_ + QLatin1Char('|') + target.key();
}

void InspectorWorker::stats(quint64 ticket, const StatsTarget& target) {
  constexpr InspectorTask kTask = InspectorTask::kStats;
  if (!begin(ticket, kTask) || !requireOpen(ticket, kTask)) return;
  const QString key = cacheKey(target);
  if (auto it = statsCache_.constFind(key); it != statsCache_.constEnd()) {
    StatsResult cached = *it;
    cached.fromCache = true;
    emit statsReady(ticket, cached);
    return;
  }

  StatsResult result;
  result.target = target;
  result.label = target.label(*model_);
  const QString where = QStringLiteral("%1: %2").arg(model_->path, result.label);
  std::vector<std::size_t> candidates = target.tensors;
  if (target.tensor) candidates = {*target.tensor};
  if (!candidates.empty()) {
    for (std::size_t i : candidates) {
      if (i >= model_->tensors.size()) {
        emit failed(ticket, kTask, QStringLiteral("%1: no tensor %2").arg(model_->path).arg(i), false);
        return;
      }
    }
  } else {
    const inspect::ModuleTree* tree = nullptr;
    for (const auto& [section, t] : model_->trees) {
      if (section == target.section) tree = &t;
    }
    const inspect::ModuleNode* node = tree ? tree->find(target.nodePath.toStdString()) : nullptr;
    if (!node) {
      emit failed(ticket, kTask, QStringLiteral("%1: no module %2").arg(model_->path, result.label), false);
      return;
    }
    collectLeaves(*tree, static_cast<std::size_t>(node - tree->nodes.data()), candidates);
    // Tied copies are the same elements under a second name: counted once (ModuleTree's rule).
    std::erase_if(candidates, [this](std::size_t i) { return model_->tensors[i].sameAs.has_value(); });
  }

  std::vector<inspect::TensorData> data;
  data.reserve(candidates.size());
  for (std::size_t i : candidates) {
    const inspect::TensorEntry& t = model_->tensors[i];
    if (!tensorfile::checkStatsDtype(t.dtype)) {
      result.skipped << QString::fromStdString(t.name);
      continue;
    }
    auto d = index_->data(i);
    if (!d) {
      emit failed(ticket, kTask, qs(d.status().message()), wasCancelled(d.status()));
      return;
    }
    data.push_back(std::move(d).value());
    result.tensors.push_back(i);
  }
  if (data.empty()) {
    emit failed(ticket, kTask,
                QStringLiteral("%1: no tensor with statistics (dtype of %2)")
                    .arg(where, result.skipped.join(QStringLiteral(", "))),
                false);
    return;
  }
  std::vector<tensorfile::TensorView> views;
  views.reserve(data.size());
  for (const auto& d : data) views.push_back(d.view);

  tensorfile::StatsOptions options;
  options.bins = std::max(1, target.bins);
  options.cancel = &cancelFlag_;
  options.chunkBytes = chunkBytes_.load();
  options.progress = progressFor(ticket, kTask);
  auto stats = tensorfile::computeStats(views, options);
  if (!stats) {
    emit failed(ticket, kTask, QStringLiteral("%1: %2").arg(where, qs(stats.status().message())),
                wasCancelled(stats.status()));
    return;
  }
  result.stats = std::move(stats).value();
  statsCache_.insert(key, result);
  emit statsReady(ticket, result);
}

void InspectorWorker::verifyHashes(quint64 ticket) {
  constexpr InspectorTask kTask = InspectorTask::kHashes;
  if (!begin(ticket, kTask) || !requireOpen(ticket, kTask)) return;
  inspect::HashCheckOptions options;
  options.cancel = &cancelFlag_;
  options.progress = progressFor(ticket, kTask);
  auto report = inspect::checkManifestHashes(*index_, options);
  if (!report) {
    emit failed(ticket, kTask, qs(report.status().message()), wasCancelled(report.status()));
    return;
  }
  if (report->cancelled) {
    emit failed(ticket, kTask, QStringLiteral("%1: hash check cancelled").arg(model_->path), true);
    return;
  }
  emit hashesReady(ticket, HashResult{std::move(report).value()});
}

void InspectorWorker::diff(quint64 ticket, const QString& otherPath) {
  constexpr InspectorTask kTask = InspectorTask::kDiff;
  if (!begin(ticket, kTask) || !requireOpen(ticket, kTask)) return;
  auto other = inspect::CheckpointIndex::open(QFile::encodeName(otherPath).toStdString());
  if (!other) {
    emit failed(ticket, kTask, qs(other.status().message()), false);
    return;
  }
  inspect::DiffOptions options;
  options.cancel = &cancelFlag_;
  options.progress = progressFor(ticket, kTask);
  auto report = inspect::diffCheckpoints(*index_, other.value(), options);
  if (!report) {
    const bool cancelled = wasCancelled(report.status());
    emit failed(
        ticket, kTask,
        QStringLiteral("%1 against %2: %3").arg(model_->path, otherPath, qs(report.status().message())),
        cancelled);
    return;
  }
  emit diffReady(ticket, DiffResult{model_->path, otherPath, std::move(report).value()});
}

void InspectorWorker::trainingState(quint64 ticket) {
  constexpr InspectorTask kTask = InspectorTask::kTrainingState;
  if (!begin(ticket, kTask) || !requireOpen(ticket, kTask)) return;
  // NOTE [Training state progress]: the optimizer's tensors are what it reads.
  std::uint64_t total = 0, done = 0;
  for (const auto& t : model_->tensors) {
    if (t.section == inspect::Section::kOptimizer && !t.sameAs) total += t.bytes;
  }
  auto report = progressFor(ticket, kTask);
  onRead_ = [&](std::uint64_t bytes) {
    done = std::min(total, done + bytes);
    report(done, total);
  };
  auto state = inspect::readTrainingState(*index_);
  onRead_ = nullptr;
  if (!state) {
    emit failed(ticket, kTask, qs(state.status().message()), wasCancelled(state.status()));
    return;
  }
  TrainingStateResult result;
  result.path = model_->path;
  result.state = std::move(state).value();
  result.state.path = model_->path.toStdString();  // "host:/path", not the sparse copy's
  if (result.state.resume && result.state.resume->data)
    result.dataPosition = qs(inspect::describeDataPosition(*result.state.resume->data));
  emit trainingStateReady(ticket, result);
}

}  // namespace fs::app
