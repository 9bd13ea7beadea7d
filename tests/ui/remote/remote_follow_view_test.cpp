// A remote run in the window's monitor: RemoteRunFollow opens the host through
// the HostOpenerService (here an SSH factory handing out a test Host over this
// machine's files whose reads can be made to fail, as a dropped connection
// does), attaches the RunMonitor through a HostRunDir, and the status bar's
// ConnectionIndicator says "connected", then "retrying" while reads fail, then
// "connected" again. A host the factory cannot open is reported.
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <atomic>
#include <filesystem>

#include "app/monitor/run_monitor.h"
#include "app/remote/local_host.h"
#include "backend/protocol/wire/run_dir.h"
#include "backend/protocol/wire/run_manifest.h"
#include "monitor_test_util.h"
#include "ui/remote/connection_indicator.h"
#include "ui/remote/host_opener_service.h"
#include "ui/remote/remote_run_follow.h"

namespace fs::ui {
namespace {

namespace proto = fs::protocol;
using app::testing::appendText;
using app::testing::line;
using app::testing::stepBody;

constexpr int kWait = 20000;  // ms; a hang guard

std::string steps(std::uint64_t first, std::uint64_t last) {
  std::string out;
  for (std::uint64_t s = first; s <= last; ++s) out += line(s, stepBody(static_cast<std::int64_t>(s) + 1));
  return out;
}

// This machine's files as a Host whose reads fail while `down` is set, as over a
// dropped SSH connection (a stand-in for the network, not for the product).
class DroppingHost : public app::remote::Host {
 public:
  std::atomic<bool> down{false};

  std::string name() const override { return "gpu-node-a"; }
  bool connected() const override { return !down; }
  protocol::StatusOr<app::remote::CommandResult> run(const std::vector<std::string>& argv,
                                                     const app::remote::ExecOptions& options) override {
    if (down) return lost("running " + argv.front());
    return inner_.run(argv, options);
  }
  protocol::StatusOr<std::string> readFile(const std::string& path, std::uint64_t offset,
                                           std::size_t max) override {
    if (down) return lost("reading " + path);
    return inner_.readFile(path, offset, max);
  }
  protocol::StatusOr<app::remote::FileInfo> stat(const std::string& path) override {
    if (down) return lost("stat " + path);
    return inner_.stat(path);
  }
  protocol::StatusOr<std::vector<app::remote::FileInfo>> list(const std::string& dir) override {
    if (down) return lost("listing " + dir);
    return inner_.list(dir);
  }
  protocol::Status writeFileAtomic(const std::string& path, std::string_view bytes,
                                   std::uint32_t mode) override {
    return inner_.writeFileAtomic(path, bytes, mode);
  }
  protocol::StatusOr<bool> writeFileIfAbsent(const std::string& path, std::string_view bytes,
                                             std::uint32_t mode) override {
    return inner_.writeFileIfAbsent(path, bytes, mode);
  }
  protocol::Status makeDirs(const std::string& path) override { return inner_.makeDirs(path); }
  protocol::Status remove(const std::string& path) override { return inner_.remove(path); }

 private:
  static protocol::Status lost(const std::string& what) {
    return protocol::Status::ioError("gpu-node-a: connection lost " + what);
  }
  app::remote::LocalHost inner_;
};

}  // namespace

class RemoteFollowViewTest : public QObject {
  Q_OBJECT

 private slots:
  void indicatorFollowsTheConnection() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::filesystem::path run = app::testing::fsPath(dir.path()) / "run";
    std::filesystem::create_directories(run / proto::kLogsDirName);
    proto::RunManifest m;
    m.run_id = "remote-view-test";
    m.engine_version = "0.1.0";
    m.created = m.updated = 1717000000000;
    m.launcher = proto::LauncherKind::kSsh;
    m.state = proto::RunState::kRunning;
    QVERIFY(proto::writeManifest(run, m).isOk());
    QVERIFY(appendText(run / proto::kEventsFileName, steps(0, 9)));

    auto files = std::make_shared<DroppingHost>();
    auto hosts = HostOpenerService::create([files](const std::string& name) {
      if (name == "gpu-node-a") return protocol::StatusOr<std::shared_ptr<app::remote::Host>>(files);
      return protocol::StatusOr<std::shared_ptr<app::remote::Host>>(
          protocol::Status::ioError(name + ": unreachable from this test"));
    });
    app::RunMonitor monitor;
    ConnectionIndicator indicator;
    RemoteRunFollow follow(hosts, &monitor, &indicator);
    QSignalSpy attached(&follow, &RemoteRunFollow::attached);
    QSignalSpy failed(&follow, &RemoteRunFollow::failed);

    follow.follow(QStringLiteral("gpu-node-a"), QString::fromStdString(run.string()));
    QVERIFY(attached.wait(kWait));
    QVERIFY(monitor.isAttached());
    QVERIFY(indicator.isVisibleTo(nullptr) || !indicator.isHidden());
    QTRY_VERIFY_WITH_TIMEOUT(indicator.text().contains(QStringLiteral("connected")), kWait);
    QVERIFY(indicator.text().contains(QStringLiteral("gpu-node-a")));

    files->down = true;  // the connection is down: every read fails
    QVERIFY(appendText(run / proto::kEventsFileName, steps(10, 19)));
    QTRY_VERIFY_WITH_TIMEOUT(indicator.isRetrying(), kWait);
    QVERIFY2(indicator.text().contains(QStringLiteral("retrying")), qPrintable(indicator.text()));
    QVERIFY(indicator.toolTip().contains(QStringLiteral("connection lost")));

    files->down = false;  // back
    QTRY_VERIFY_WITH_TIMEOUT(!indicator.isRetrying(), kWait);
    QVERIFY(indicator.text().contains(QStringLiteral("connected")));
    QTRY_COMPARE_WITH_TIMEOUT(monitor.status().events, std::uint64_t{20}, kWait);

    follow.followingLocal();
    QVERIFY(indicator.isHidden());

    follow.follow(QStringLiteral("gpu-node-b"), QStringLiteral("/scratch/run"));
    QVERIFY(failed.wait(kWait));
    QVERIFY(failed.takeFirst().at(0).toString().contains(
        QStringLiteral("gpu-node-b: unreachable from this test")));
    monitor.detach();
  }
};

}  // namespace fs::ui

QTEST_MAIN(fs::ui::RemoteFollowViewTest)
#include "remote_follow_view_test.moc"
