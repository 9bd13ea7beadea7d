// Follows a run directory through a RunDirSource with the app's RunFollower and
// keeps what a test checks: every delivered seq, the steps' losses, the acks (fed
// to a ControlClient, as the monitor does), the issues, whether run_finished came.
//
// Thread-safety: the test's thread; the follower polls on a worker thread of its own,
// as in the app, so a blocked network call never stalls the test's event loop.
#pragma once

#include <QObject>
#include <QtTest>
#include <map>
#include <memory>
#include <vector>

#include "app/common/worker_thread.h"
#include "app/control/control_client.h"
#include "app/monitor/run_follower.h"

namespace fs::app::test {

class FollowRecorder : public QObject {
 public:
  FollowRecorder(std::shared_ptr<RunDirSource> source, ControlClient* control = nullptr) : control_(control) {
    qRegisterMetaType<fs::app::FollowBatchPtr>();
    qRegisterMetaType<fs::app::FollowIssue>();
    FollowOptions options;
    options.source = std::move(source);
    options.poll_interval_ms = 50;
    options.process_check_interval_ms = 0;
    thread_ =
        std::make_unique<WorkerThread<RunFollower>>(new RunFollower(options), QStringLiteral("follower"));
    RunFollower* f = thread_->worker();
    connect(f, &RunFollower::batchReady, this, [this](const FollowBatchPtr& b) { take(*b); });
    connect(f, &RunFollower::issue, this, [this](const FollowIssue& i) { issues.push_back(i); });
    QMetaObject::invokeMethod(f, &RunFollower::start, Qt::QueuedConnection);
  }
  ~FollowRecorder() override {
    thread_->worker()->cancel();
    thread_.reset();
  }

  // Seqs delivered exactly once each, from 0 up, with no gap or duplicate issue.
  bool seqsComplete(QString* why) const {
    for (std::size_t i = 0; i < seqs.size(); ++i) {
      if (seqs[i] != i) {
        *why = QStringLiteral("seq #%1 is %2").arg(i).arg(seqs[i]);
        return false;
      }
    }
    for (const auto& i : issues) {
      if (i.kind == FollowIssue::Kind::kSeqGap || i.kind == FollowIssue::Kind::kDuplicate) {
        *why = i.message;
        return false;
      }
    }
    return true;
  }

  std::vector<std::uint64_t> seqs;
  std::map<std::int64_t, std::map<std::string, double>> losses;  // step -> loss per dataset
  std::vector<FollowIssue> issues;
  std::vector<protocol::ControlAckEvent> acks;
  bool finished = false;
  protocol::FinishStatus finishStatus = protocol::FinishStatus::kOk;
  int batches = 0;
  std::vector<protocol::RunAttempt> attempts;  // run.json's, as of the latest run_started

 private:
  void take(const FollowBatch& b) {
    ++batches;
    seqs.insert(seqs.end(), b.seqs.begin(), b.seqs.end());
    for (const auto& e : b.events) {
      if (const auto* ack = std::get_if<protocol::ControlAckEvent>(&e.body)) {
        acks.push_back(*ack);
        if (control_ != nullptr) control_->onAck(*ack);
      } else if (const auto* state = std::get_if<protocol::StateEvent>(&e.body)) {
        if (control_ != nullptr) control_->setRunState(state->state);
      } else if (const auto* f = std::get_if<protocol::RunFinishedEvent>(&e.body)) {
        finished = true;
        finishStatus = f->status;
      }
    }
    if (b.attempts) attempts = *b.attempts;
    // Steps come as series points: "loss/<dataset>" per step row (app/monitor/series_names.h).
    for (const auto& points : b.series.series) {
      if (!points.name.starts_with("loss/") || points.name.find('/', 5) != std::string::npos) continue;
      const std::string dataset = points.name.substr(5);
      for (std::size_t i = 0; i < points.rows.size(); ++i) {
        if (b.series.rows.from_step[points.rows[i]] == 0) continue;
        losses[static_cast<std::int64_t>(b.series.rows.step[points.rows[i]])][dataset] = points.y[i];
      }
    }
  }

  ControlClient* control_;
  std::unique_ptr<WorkerThread<RunFollower>> thread_;
};

}  // namespace fs::app::test
