// SlurmPoller: a timer, one squeue per tick, scontrol for jobs that left it.
#include "app/launch/slurm/slurm_poller.h"

#include <algorithm>

namespace fs::app::cluster {

SlurmPoller::SlurmPoller(std::shared_ptr<remote::Host> host, std::vector<std::string> prefix, QObject* parent)
    : QObject(parent), host_(std::move(host)), prefix_(std::move(prefix)) {
  qRegisterMetaType<fs::app::cluster::SlurmJobRow>();
  qRegisterMetaType<QList<fs::app::cluster::SlurmJobRow>>();
}

int SlurmPoller::delayAfter(int failures, int interval_ms) {
  long long ms = interval_ms;
  for (int i = 0; i < failures && ms < kMaxBackoffMs; ++i) ms *= 2;
  return static_cast<int>(std::min<long long>(ms, std::max(kMaxBackoffMs, interval_ms)));
}

void SlurmPoller::watch(const QStringList& ids) {
  ids_ = ids;
  stopped_ = false;
  pollNow();
}

void SlurmPoller::stop() {
  stopped_ = true;
  QMetaObject::invokeMethod(
      this,
      [this] {
        if (timer_) timer_->stop();
      },
      Qt::QueuedConnection);
}

void SlurmPoller::schedule(int ms) {
  if (!timer_) {
    timer_ = new QTimer(this);
    timer_->setSingleShot(true);
    connect(timer_, &QTimer::timeout, this, &SlurmPoller::pollNow);
  }
  if (!stopped_) timer_->start(ms);
}

void SlurmPoller::pollNow() {
  if (stopped_) return;
  if (timer_) timer_->stop();
  SlurmJobs jobs(*host_, prefix_);
  jobs.setCancelFlag(&stopped_);
  std::vector<std::string> ids;
  for (const auto& id : ids_) ids.push_back(id.toStdString());
  if (ids.empty()) {  // nothing to follow: no squeue at all
    emit rows({});
    return;
  }
  auto queue = jobs.queue(ids);
  if (!queue) {
    if (stopped_) return;
    const int retry = delayAfter(++failures_, interval_ms_);
    emit failed(QString::fromStdString(queue.status().message()), retry);
    schedule(retry);
    return;
  }
  QList<SlurmJobRow> out;
  for (const auto& row : queue.value()) out.push_back(row);
  // Jobs that left the queue: how they ended, once; forgotten ones are dropped.
  QStringList keep;
  for (const auto& id : ids_) {
    const std::string sid = id.toStdString();
    const auto listed =
        std::find_if(out.begin(), out.end(), [&](const SlurmJobRow& r) { return r.id == sid; });
    if (listed != out.end()) {
      if (isActiveState(listed->state)) {
        keep << id;
      } else if (auto ended = jobs.job(sid); ended) {
        *listed = ended.value();  // an ended job is reported once, with its exit code
      }
      continue;
    }
    auto ended = jobs.job(sid);
    if (ended) {
      out.push_back(ended.value());
      if (isActiveState(ended->state)) keep << id;
    } else if (ended.status().code() == protocol::Status::Code::kNotFound) {
      SlurmJobRow gone;
      gone.id = sid;
      gone.state = "UNKNOWN";
      gone.reason = "forgotten by the controller";
      out.push_back(gone);
    } else {
      keep << id;  // asked again next time
    }
  }
  ids_ = keep;
  failures_ = 0;
  emit rows(out);
  if (!ids_.isEmpty()) schedule(interval_ms_);
}

}  // namespace fs::app::cluster
