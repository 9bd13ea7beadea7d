#include "app/launch/ssh/ssh_launch_worker.h"

#include <QTimer>

#include "app/launch/ssh/agent_outcome.h"
#include "app/launch/ssh/remote_agent.h"

namespace fs::app::cluster {

SshLaunchWorker::SshLaunchWorker(HostOpener open, QObject* parent)
    : QObject(parent), open_(std::move(open)) {}

void SshLaunchWorker::launch(const SshLaunchPlan& plan) {
  cancel_.store(false);
  auto result = launchOverSsh(
      plan, open_, [this](const std::string& m) { emit progress(QString::fromStdString(m)); }, &cancel_);
  if (!result) {
    emit failed(QString::fromStdString(result.status().message()));
    return;
  }
  record_ = result->record;
  hosts_.clear();
  for (const auto& n : record_.nodes) {
    auto h = open_(n.host);
    if (!h) {
      emit warning(QString::fromStdString(h.status().message()));
      hosts_.clear();
      break;
    }
    hosts_.push_back(std::move(h.value()));
  }
  QStringList warnings;
  for (const auto& w : result->warnings) warnings << QString::fromStdString(w);
  emit started(record_, warnings);
  if (hosts_.empty()) return;
  if (timer_ == nullptr) {
    timer_ = new QTimer(this);
    connect(timer_, &QTimer::timeout, this, &SshLaunchWorker::poll);
  }
  timer_->start(pollMs_);
}

void SshLaunchWorker::signalAgents(const QString& signal, bool wholeGroup) {
  if (record_.nodes.empty()) return;
  for (std::size_t i = 0; i < record_.nodes.size() && i < hosts_.size(); ++i) {
    const auto& n = record_.nodes[i];
    auto state = signalAgent(*hosts_[i], recordedAgent(n, record_.run_dir), signal.toStdString(), wholeGroup);
    if (!state) {
      emit warning(
          QStringLiteral("node %1 (%2): SIG%3 not sent: %4")
              .arg(i)
              .arg(QString::fromStdString(n.host), signal, QString::fromStdString(state.status().message())));
    } else if (state.value() != AgentState::kAlive) {
      emit progress(
          QStringLiteral("node %1 (%2): agent %3, nothing signalled")
              .arg(i)
              .arg(QString::fromStdString(n.host), QString::fromLatin1(agentStateName(state.value()))));
    }
  }
  poll();
}

void SshLaunchWorker::poll() {
  if (hosts_.empty()) return;
  auto outcome = checkAgents(hosts_, record_);
  if (!outcome) {
    // A connection drop: keep polling; the run goes on without us.
    const QString message = QString::fromStdString(outcome.status().message());
    if (message != lastPollError_) emit warning(QStringLiteral("checking the node agents: %1").arg(message));
    lastPollError_ = message;
    return;
  }
  lastPollError_.clear();
  if (!outcome->finished) return;
  if (timer_ != nullptr) timer_->stop();
  emit finished(outcome->exit_code, outcome->crashed, QString::fromStdString(outcome->message));
  hosts_.clear();
  record_ = {};
}

}  // namespace fs::app::cluster
