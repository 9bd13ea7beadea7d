#include "ui/remote/connection_indicator.h"

namespace fs::ui {

ConnectionIndicator::ConnectionIndicator(QWidget* parent) : QLabel(parent) {
  setObjectName(QStringLiteral("connectionIndicator"));
  setTextFormat(Qt::RichText);
  hide();
}

void ConnectionIndicator::setRemote(const QString& host) {
  host_ = host;
  retrying_ = false;
  setText(tr("%1: <span style=\"color:#757575\">connecting\u2026</span>").arg(host_.toHtmlEscaped()));
  setToolTip({});
  show();
}

void ConnectionIndicator::setLocal() {
  host_.clear();
  retrying_ = false;
  hide();
}

void ConnectionIndicator::noteIssue(const app::FollowIssue& issue) {
  if (host_.isEmpty() || issue.kind != app::FollowIssue::Kind::kReadError) return;
  retrying_ = true;
  setText(tr("%1: <span style=\"color:#c77c02\">retrying</span> \u2014 %2")
              .arg(host_.toHtmlEscaped(), issue.message.left(80).toHtmlEscaped()));
  setToolTip(issue.message);
}

void ConnectionIndicator::noteDelivered() {
  if (host_.isEmpty()) return;
  if (!retrying_ && text().contains(QLatin1String("connected"))) return;
  retrying_ = false;
  setText(tr("%1: <span style=\"color:#2e7d32\">connected</span>").arg(host_.toHtmlEscaped()));
  setToolTip({});
}

}  // namespace fs::ui
