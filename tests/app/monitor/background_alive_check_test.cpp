// aliveCheckInBackground around a check that blocks until the test answers it:
// calls return at once, one probe runs at a time, an answer counts only for the
// pid it was about. Waits are hang guards, never durations asserted.
#include "app/monitor/background_alive_check.h"

#include <QThreadPool>
#include <QtTest>
#include <condition_variable>
#include <mutex>

namespace fs::app {
namespace {

constexpr int kWaitMs = 20'000;

// A blocking check: each call waits until answer() gives it a value.
class ScriptedProbe {
 public:
  AliveCheck check() {
    return [this](const protocol::RunManifest&) {
      std::unique_lock lock(mutex_);
      ++started_;
      changed_.notify_all();
      changed_.wait(lock, [&] { return answers_ > 0; });
      --answers_;
      return next_;
    };
  }
  // Lets one waiting (or the next) probe return `value`.
  void answer(std::optional<bool> value) {
    std::lock_guard lock(mutex_);
    next_ = value;
    ++answers_;
    changed_.notify_all();
  }
  bool waitStarted(int n) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, std::chrono::milliseconds(kWaitMs), [&] { return started_ >= n; });
  }
  int started() {
    std::lock_guard lock(mutex_);
    return started_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int started_ = 0;
  int answers_ = 0;
  std::optional<bool> next_;
};

protocol::RunManifest withPid(std::int64_t pid) {
  protocol::RunManifest m;
  m.pid = pid;
  return m;
}

}  // namespace

class BackgroundAliveCheckTest : public QObject {
  Q_OBJECT

 private slots:
  void callsNeverWaitForTheProbe() {
    ScriptedProbe probe;
    auto alive = aliveCheckInBackground(probe.check());
    QCOMPARE(alive(withPid(7)), std::optional<bool>());  // the probe blocks; this did not
    QVERIFY(probe.waitStarted(1));
    QCOMPARE(alive(withPid(7)), std::optional<bool>());  // still in flight: no second probe
    QCOMPARE(alive(withPid(7)), std::optional<bool>());
    QCOMPARE(probe.started(), 1);
    probe.answer(false);
    // Its answer, once it finished; each such call starts the next probe.
    QTRY_COMPARE_WITH_TIMEOUT(alive(withPid(7)), std::optional<bool>(false), kWaitMs);
    QVERIFY(probe.waitStarted(2));
    probe.answer(true);
    QTRY_COMPARE_WITH_TIMEOUT(alive(withPid(7)), std::optional<bool>(true), kWaitMs);
    probe.answer(true);  // whatever probe is in flight now ends
    QVERIFY(QThreadPool::globalInstance()->waitForDone(kWaitMs));
  }

  void anAnswerCountsOnlyForItsPid() {
    ScriptedProbe probe;
    auto alive = aliveCheckInBackground(probe.check());
    (void)alive(withPid(7));
    QVERIFY(probe.waitStarted(1));
    probe.answer(false);  // pid 7 is gone...
    QTRY_COMPARE_WITH_TIMEOUT(alive(withPid(7)), std::optional<bool>(false), kWaitMs);
    QVERIFY(probe.waitStarted(2));
    // ...but the run restarted as pid 8: not judged by pid 7's answer.
    QCOMPARE(alive(withPid(8)), std::optional<bool>());
    probe.answer(true);  // the probe started for pid 7 ends (pid 7 alive)...
    QTRY_VERIFY_WITH_TIMEOUT((alive(withPid(8)), probe.started() >= 3),
                             kWaitMs);                   // ...a call starts one for 8
    QCOMPARE(alive(withPid(8)), std::optional<bool>());  // the last answer is still pid 7's
    probe.answer(true);
    QTRY_COMPARE_WITH_TIMEOUT(alive(withPid(8)), std::optional<bool>(true), kWaitMs);
    probe.answer(true);
    QVERIFY(QThreadPool::globalInstance()->waitForDone(kWaitMs));
  }
};

}  // namespace fs::app

QTEST_GUILESS_MAIN(fs::app::BackgroundAliveCheckTest)
#include "background_alive_check_test.moc"
