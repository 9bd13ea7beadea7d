// RunStatusBar: one line saying where a run stands: state, step / total,
// samples/s, ETA.
//
// Fed whole RunStatus values by whoever watches the run (the data layer);
// shows them and nothing else: it computes no rate and no ETA itself.
//
// Thread-safety: GUI thread only.
#pragma once

#include <QString>
#include <QWidget>
#include <cstdint>
#include <optional>

class QLabel;

namespace fs::ui {

// What the monitor shows a run as. Unlike protocol::RunState it has
// kStalled: the run says it is running but no step came for too long.
enum class MonitorState { kStarting, kRunning, kPaused, kStalled, kStopping, kFinished, kFailed };

struct RunStatus {
  MonitorState state = MonitorState::kStarting;
  std::int64_t step = 0;                // optimizer steps done
  std::int64_t total_steps = 0;         // 0: not known yet
  std::optional<double> samples_per_s;  // all datasets, all ranks; absent: not known
  std::optional<double> eta_s;          // seconds to the last step; absent: not known
  bool operator==(const RunStatus&) const = default;
};

// "starting", "running", ... as the status bar shows them.
QString stateText(MonitorState state);
// The colour the state is shown in (#rrggbb).
QString stateColor(MonitorState state);

class RunStatusBar : public QWidget {
  Q_OBJECT
 public:
  explicit RunStatusBar(QWidget* parent = nullptr);

  void setStatus(const RunStatus& status);
  const RunStatus& status() const { return status_; }

  // The texts shown, for tests: "Step 1,250 / 10,000 (12.5%)", "532 samples/s",
  // "ETA 1:23:45", "running".
  QString stepText() const;
  QString rateText() const;
  QString etaText() const;
  QString stateLabelText() const;
  // All four joined by " · ".
  QString text() const;

 private:
  RunStatus status_;
  QLabel* state_;
  QLabel* step_;
  QLabel* rate_;
  QLabel* eta_;
};

}  // namespace fs::ui
