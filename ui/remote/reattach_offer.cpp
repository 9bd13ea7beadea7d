#include "ui/remote/reattach_offer.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSettings>

#include "app/common/user_dirs.h"

namespace fs::ui {
namespace {

const QString kGroup = QStringLiteral("remote_follow");

}  // namespace

ReattachOffer::ReattachOffer(QWidget* parent)
    : QWidget(parent),
      label_(new QLabel),
      reattach_(new QPushButton(tr("Re-attach"))),
      dismiss_(new QPushButton(tr("Dismiss"))) {
  setObjectName(QStringLiteral("reattachOffer"));
  reattach_->setObjectName(QStringLiteral("reattachButton"));
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(label_);
  layout->addWidget(reattach_);
  layout->addWidget(dismiss_);
  connect(reattach_, &QPushButton::clicked, this, [this] {
    hide();
    emit reattachRequested(offered_.host, offered_.runDir);
  });
  connect(dismiss_, &QPushButton::clicked, this, [this] {
    hide();
    remember(std::nullopt);
  });
  hide();
}

std::optional<RemoteRunRef> ReattachOffer::remembered() {
  QSettings settings(app::userSettingsPath(), QSettings::IniFormat);
  settings.beginGroup(kGroup);
  RemoteRunRef run{settings.value(QStringLiteral("host")).toString(),
                   settings.value(QStringLiteral("run_dir")).toString()};
  if (run.host.isEmpty() || run.runDir.isEmpty()) return std::nullopt;
  return run;
}

void ReattachOffer::remember(const std::optional<RemoteRunRef>& run) {
  QSettings settings(app::userSettingsPath(), QSettings::IniFormat);
  if (!run) {
    if (settings.childGroups().contains(kGroup)) settings.remove(kGroup);  // else write nothing
    return;
  }
  settings.beginGroup(kGroup);
  settings.setValue(QStringLiteral("host"), run->host);
  settings.setValue(QStringLiteral("run_dir"), run->runDir);
}

bool ReattachOffer::isLiveState(const QString& state) {
  return state == QLatin1String("starting") || state == QLatin1String("running") ||
         state == QLatin1String("paused") || state == QLatin1String("stopping");
}

bool ReattachOffer::offerRemembered() {
  const auto run = remembered();
  if (!run) return false;
  offered_ = *run;
  label_->setText(tr("%1:%2 was live when the window closed.").arg(run->host, run->runDir));
  show();
  return true;
}

}  // namespace fs::ui
