// The window closed in the middle of a real SSH run: a 2-node run launched with
// the window's Launch on namespace hosts (real sshd, tests/fixtures/ssh_hosts.h)
// and followed in its monitor; the window closes; both node agents are still
// running (probed by pid, boot id and start time). A new window offers to
// re-attach; its Re-attach follows the run over SSH with the whole history (every
// seq from 0, the losses of events.jsonl), and its Stop button stops the run.
#include <unistd.h>

#include <QDir>
#include <QFile>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <map>

#include "app/config/config_document.h"
#include "app/launch/ssh/remote_agent.h"
#include "app/launch/ssh/ssh_launcher.h"
#include "app/monitor/run_monitor.h"
#include "app/monitor/series_names.h"
#include "app/remote/ssh_config.h"
#include "backend/protocol/wire/event_codec.h"
#include "backend/protocol/wire/launch_record.h"
#include "backend/protocol/wire/run_dir.h"
#include "tests/fixtures/fixture_unavailable.h"
#include "tests/fixtures/ssh_hosts.h"
#include "ui/control/run_control_bar.h"
#include "ui/main_window.h"
#include "ui/monitor/monitor_page.h"
#include "ui/remote/host_opener_service.h"
#include "ui/remote/launch_dispatcher.h"
#include "ui/remote/launch_target_page.h"
#include "ui/remote/reattach_offer.h"
#include "ui/remote/remote_run_follow.h"
#include "ui/runs/runs_panel.h"

namespace fs::ui {
namespace {

namespace proto = fs::protocol;
constexpr int kWaitMs = 240'000;  // a hang guard, never a duration asserted
const QString kEngine = QStringLiteral(FS_TEST_FLAMINGO_TRAIN);

// Step -> losses, from the run's events.jsonl (the namespace hosts share this file system).
std::map<std::int64_t, std::map<std::string, double>> lossesInFile(const std::string& runDir) {
  std::map<std::int64_t, std::map<std::string, double>> out;
  QFile f(QString::fromStdString(runDir + "/" + std::string(proto::kEventsFileName)));
  if (!f.open(QIODevice::ReadOnly)) return out;
  const QByteArray bytes = f.readAll();
  proto::EventDecoder decoder;
  for (const auto& line :
       decoder.feed(std::string_view(bytes.constData(), static_cast<std::size_t>(bytes.size())))) {
    if (line.kind != proto::DecodedLine::Kind::kEvent) continue;
    if (const auto* s = std::get_if<proto::StepEvent>(&line.event.body)) out[s->step] = s->loss;
  }
  return out;
}

}  // namespace

class WindowClosedMidRunTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    hosts_ = std::make_unique<fs::testing::SshHosts>(2);
    if (!hosts_->ok()) FS_QT_FIXTURE_UNAVAILABLE("sshd hosts in network namespaces: " + hosts_->error());
    QVERIFY(tmp_.isValid());
    QVERIFY(QDir::setCurrent(tmp_.path()));
    // The settings and the window's History: under XDG directories in here.
    qputenv("XDG_CONFIG_HOME", QFile::encodeName(tmp_.filePath(QStringLiteral("config"))));
    qputenv("XDG_DATA_HOME", QFile::encodeName(tmp_.filePath(QStringLiteral("data"))));
    ReattachOffer::remember(std::nullopt);
  }
  void cleanupTestCase() { hosts_.reset(); }

  void closedWindowLeavesTheRunGoingAndANewOneReattachesToAllOfIt() {
    const std::string remoteRoot = tmp_.filePath(QStringLiteral("remote-runs")).toStdString();
    std::string runDir;
    proto::LaunchRecord record;
    std::uint64_t seenBefore = 0;
    {
      app::ConfigDocument doc;
      MainWindow first(&doc);
      first.hosts()->setSshFactory(factory());
      first.runsPanel()->setAutoRefreshSeconds(0);
      configure(doc, first, remoteRoot);
      first.show();
      auto* ssh = first.launchDispatcher()->sshLauncher();
      QSignalSpy started(ssh, &app::Launcher::started);
      QSignalSpy failed(ssh, &app::Launcher::failed);
      QSignalSpy attached(first.remoteRunFollow(), &RemoteRunFollow::attached);
      first.launch();
      QTRY_VERIFY_WITH_TIMEOUT(started.count() == 1 || failed.count() == 1, kWaitMs);
      QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.at(0).at(0).toString()));
      record = ssh->record();
      runDir = record.run_dir;
      QCOMPARE(record.nodes.size(), std::size_t{2});
      QTRY_COMPARE_WITH_TIMEOUT(attached.count(), 1, kWaitMs);
      QCOMPARE(attached.at(0).at(0).toString(), QString::fromStdString(hosts_->alias(0)));
      QTRY_VERIFY_WITH_TIMEOUT(first.monitor()->status().step >= 2, kWaitMs);
      seenBefore = first.monitor()->status().events;
      QVERIFY(first.close());  // the window goes, with its monitor, launcher and SSH sessions
    }
    const auto remembered = ReattachOffer::remembered();
    QVERIFY(remembered.has_value());
    QCOMPARE(remembered->host, QString::fromStdString(hosts_->alias(0)));
    QCOMPARE(remembered->runDir, QString::fromStdString(runDir));

    // Both agents outlived the window.
    HostOpenerService probe(factory());
    for (const auto& n : record.nodes) {
      auto host = probe.open(n.host);
      QVERIFY2(host.isOk(), host.isOk() ? "" : host.status().message().c_str());
      auto state = app::cluster::probeAgent(*host.value(), app::cluster::recordedAgent(n, runDir));
      QVERIFY2(state.isOk(), state.isOk() ? "" : state.status().message().c_str());
      QCOMPARE(state.value(), app::cluster::AgentState::kAlive);
    }

    app::ConfigDocument doc;
    MainWindow second(&doc);
    second.hosts()->setSshFactory(factory());
    second.runsPanel()->setAutoRefreshSeconds(0);
    second.show();
    QVERIFY(second.reattachOffer()->isVisibleTo(&second));
    QSignalSpy attached(second.remoteRunFollow(), &RemoteRunFollow::attached);
    QTest::mouseClick(second.reattachOffer()->reattachButton(), Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(attached.count(), 1, kWaitMs);
    app::RunMonitor* monitor = second.monitor();
    QTRY_VERIFY_WITH_TIMEOUT(monitor->status().events > seenBefore, kWaitMs);  // it went on meanwhile
    QPushButton* stop = second.monitorPage()->controlBar()->stopButton();
    QTRY_VERIFY_WITH_TIMEOUT(stop->isEnabled(), kWaitMs);
    QTest::mouseClick(stop, Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(monitor->status().finished.has_value(), kWaitMs);
    QVERIFY(monitor->status().finished->status == proto::FinishStatus::kStopped);

    // The whole history, from the first step: every step of events.jsonl is in the store.
    const auto inFile = lossesInFile(runDir);
    QVERIFY(!inFile.empty());
    const auto& store = *monitor->store();
    for (const auto& [dataset, loss] : inFile.begin()->second) {
      const auto& ys = store.y(app::series::loss(dataset));
      QCOMPARE(ys.size(), inFile.size());
      std::size_t i = 0;
      for (const auto& [step, losses] : inFile) {
        QVERIFY2(ys[i] == losses.at(dataset), qPrintable(QStringLiteral("step %1").arg(step)));
        ++i;
      }
    }
    for (const auto& n : record.nodes) {
      auto host = probe.open(n.host);
      QVERIFY(host.isOk());
      QTRY_VERIFY_WITH_TIMEOUT(
          app::cluster::probeAgent(*host.value(), app::cluster::recordedAgent(n, runDir)).value() ==
              app::cluster::AgentState::kGone,
          kWaitMs);
    }
    QVERIFY(second.close());
    QVERIFY(!ReattachOffer::remembered().has_value());  // a finished run is not offered again
  }

 private:
  // The fixture's ssh_config; its known_hosts holds every key, so nobody is asked.
  SshHostFactory factory() const {
    app::remote::SshConfigOptions options;
    options.user_config = hosts_->configPath();
    options.system_config.clear();
    return sshHostFactory(nullptr, options);
  }

  // The tiny preset as a 2-node SSH run that goes on until it is stopped.
  void configure(app::ConfigDocument& doc, MainWindow& window, const std::string& remoteRoot) {
    QSignalSpy loaded(&doc, &app::ConfigDocument::loaded);
    doc.loadFile(QStringLiteral(FS_SOURCE_DIR "/resources/presets/tiny.yaml"));
    QVERIFY(loaded.wait(5000));
    const int port = 24000 + (::getpid() % 2000) * 3;
    const std::vector<std::pair<std::string, std::string>> fields = {
        {"optim.epochs", "1000"},
        {"optim.warmup_steps", "0"},
        {"checkpoint.every_steps", "0"},
        {"telemetry.interval_steps", "1"},
        {"launch.kind", "ssh"},
        {"launch.nnodes", "2"},
        {"launch.nproc_per_node", "1"},
        {"launch.threads_per_rank", "1"},
        {"launch.master_addr", hosts_->hostAddress(0)},
        {"launch.master_port", std::to_string(port)},
        {"launch.remote_workdir", remoteRoot},
    };
    for (const auto& [path, text] : fields) {
      const auto s = doc.setField(path, text);
      QVERIFY2(s.isOk(), (path + ": " + s.message()).c_str());
    }
    QVERIFY(doc.setFieldValue("launch.hosts",
                              proto::Value(std::vector<std::string>{hosts_->alias(0), hosts_->alias(1)}))
                .isOk());
    QVERIFY2(doc.errorCount() == 0, qPrintable(QString::number(doc.errorCount())));
    auto* engine = window.launchTargetPage()->findChild<QLineEdit*>(QStringLiteral("remoteEngine"));
    QVERIFY(engine != nullptr);
    engine->setText(kEngine);
  }

  std::unique_ptr<fs::testing::SshHosts> hosts_;
  QTemporaryDir tmp_{QStringLiteral("/tmp/fs-window-closed-XXXXXX")};
};

}  // namespace fs::ui

QTEST_MAIN(fs::ui::WindowClosedMidRunTest)
#include "window_closed_mid_run_test.moc"
