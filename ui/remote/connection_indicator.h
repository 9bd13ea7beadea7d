// ConnectionIndicator: a status-bar label for the attached remote run —
// "node-a: connected", or "node-a: retrying — <reason>" after the follower
// could not read the run's files (FollowIssue::kReadError: the connection is
// down, the follower keeps polling and the Host reconnects). Back to
// "connected" with the next delivered batch. Hidden while the run followed is
// a local one.
//
// Thread-safety: GUI thread only.
#pragma once

#include <QLabel>

#include "app/monitor/follow_types.h"

namespace fs::ui {

class ConnectionIndicator : public QLabel {
  Q_OBJECT
 public:
  explicit ConnectionIndicator(QWidget* parent = nullptr);

  bool isRetrying() const { return retrying_; }

 public slots:
  // A remote run on `host` is attached (connecting until the first batch).
  void setRemote(const QString& host);
  // A local run (or none): hidden.
  void setLocal();
  void noteIssue(const fs::app::FollowIssue& issue);
  void noteDelivered();

 private:
  QString host_;
  bool retrying_ = false;
};

}  // namespace fs::ui
