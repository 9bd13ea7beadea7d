#include "app/monitor/run_attempts.h"

namespace fs::app {

QString attemptLine(const std::vector<protocol::RunAttempt>& attempts) {
  if (attempts.size() < 2) return {};
  const protocol::RunAttempt& last = attempts.back();
  QString line = QStringLiteral("attempt %1").arg(last.attempt + 1);
  // The agent counts its own restarts from 0; a run resumed by hand starts it again.
  if (last.max_restarts && last.restart)
    line += QStringLiteral(" of %1").arg(last.attempt - *last.restart + *last.max_restarts + 1);
  const bool restarted = last.restart.value_or(0) > 0;
  line += (restarted ? QStringLiteral(" — restarted after: ") : QStringLiteral(" — ")) +
          QString::fromStdString(last.reason);
  return line;
}

}  // namespace fs::app
