// ReattachOffer: remembers the remote run the window follows when it closes, and on
// the next start offers to follow it again: a small bar for the status area (a
// label, "Re-attach" and "Dismiss"), never a blocking dialog.
//
// Stored in the GUI's settings file (app::userSettingsPath(), group "remote_follow":
// host, run_dir) only while the run was live (starting, running, paused, stopping);
// a closed window that followed nothing live forgets it.
//
// Ownership: a plain widget the window places. Thread-safety: GUI thread only.
#pragma once

#include <QString>
#include <QWidget>
#include <optional>

class QLabel;
class QPushButton;

namespace fs::ui {

struct RemoteRunRef {
  QString host;
  QString runDir;
};

class ReattachOffer : public QWidget {
  Q_OBJECT
 public:
  explicit ReattachOffer(QWidget* parent = nullptr);

  // What the settings hold (nothing when no live remote run was remembered).
  static std::optional<RemoteRunRef> remembered();
  // Stores `run` for the next start; nullopt forgets.
  static void remember(const std::optional<RemoteRunRef>& run);
  // Whether a run in `state` ("running", ...) is worth re-attaching to.
  static bool isLiveState(const QString& state);

  // Shows the bar when the settings remember a run (then true); else stays hidden.
  bool offerRemembered();
  QPushButton* reattachButton() const { return reattach_; }
  QPushButton* dismissButton() const { return dismiss_; }

 signals:
  // "Re-attach" pressed: follow `host`:`runDir` (the bar hides, the memory is kept
  // until the window closes again).
  void reattachRequested(const QString& host, const QString& runDir);

 private:
  QLabel* label_;
  QPushButton* reattach_;
  QPushButton* dismiss_;
  RemoteRunRef offered_;
};

}  // namespace fs::ui
