// SlurmQueuePanel: the SLURM jobs submitted from here — job id, name, state,
// reason, elapsed, nodes, node list — fed by a SlurmPoller
// (app/launch/slurm/slurm_poller.h) on a worker thread, with Refresh, Cancel job
// (after a confirmation) and the poll interval (or the back-off after a failed
// poll) shown.
//
// watch() adds a job on a login host; the panel opens that host on its
// RemoteWorker thread, then starts one poller for it (one login host at a time:
// watching a job on another host replaces the poller and the rows).
//
// Ownership: shares the hosts. Thread-safety: GUI thread only.
#pragma once

#include <QList>
#include <QStringList>
#include <QWidget>
#include <functional>
#include <memory>

#include "app/common/worker_thread.h"
#include "app/launch/slurm/slurm_poller.h"
#include "ui/remote/host_opener_service.h"
#include "ui/remote/remote_worker.h"

class QLabel;
class QPushButton;
class QTableWidget;

namespace fs::ui {

class SlurmQueuePanel : public QWidget {
  Q_OBJECT
 public:
  enum Column { kId, kName, kState, kReason, kElapsed, kNodes, kNodeList, kColumnCount };

  explicit SlurmQueuePanel(std::shared_ptr<HostOpenerService> hosts, QWidget* parent = nullptr);
  ~SlurmQueuePanel() override;

  // Asks before cancelling; default: a question box. Tests replace it.
  void setConfirm(std::function<bool(const QString& question)> confirm) { confirm_ = std::move(confirm); }

  QTableWidget* table() const { return table_; }
  QString loginHost() const { return host_; }
  QStringList jobIds() const { return ids_; }
  QString intervalText() const;

 public slots:
  // Follows job `jobId` submitted through `loginHost`.
  void watch(const QString& loginHost, const QString& jobId);
  // Shows rows (from the poller, or given directly).
  void setRows(const QList<fs::app::cluster::SlurmJobRow>& rows);
  void refresh();
  // Cancels the selected job (scancel) after confirming.
  void cancelSelected();

 signals:
  void message(const QString& text);

 private:
  void startPoller(const std::shared_ptr<app::remote::Host>& host);
  void showInterval(int ms, const QString& failure);

  std::shared_ptr<HostOpenerService> hosts_;
  std::unique_ptr<app::WorkerThread<RemoteWorker>> worker_;
  std::unique_ptr<app::WorkerThread<app::cluster::SlurmPoller>> poller_;
  std::function<bool(const QString&)> confirm_;
  QString host_;
  QStringList ids_;
  QTableWidget* table_;
  QLabel* state_;
  QPushButton* refresh_;
  QPushButton* cancel_;
};

}  // namespace fs::ui
