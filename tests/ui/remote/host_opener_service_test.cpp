// HostOpenerService with an SSH factory that stands in for a slow or unreachable
// host (it blocks until the test lets it go, as a connect to a host that does not
// answer blocks until its timeout): an open of one name does not hold up an open
// of another, callers of one name share one open, a failure is not kept, and an
// open begun before clear() is not kept either. Waits are hang guards, never
// durations asserted.
#include "ui/remote/host_opener_service.h"

#include <QtTest>
#include <atomic>
#include <chrono>
#include <future>
#include <mutex>

#include "app/remote/local_host.h"

namespace fs::ui {
namespace {

using HostResult = protocol::StatusOr<std::shared_ptr<app::remote::Host>>;
constexpr auto kHangGuard = std::chrono::seconds(20);

// A factory whose open of "slow" blocks until release(); every other name opens at once.
class GatedFactory {
 public:
  SshHostFactory factory(bool slowFails = false) {
    return [this, slowFails](const std::string& name) -> HostResult {
      ++calls_;
      if (name == "slow") {
        std::call_once(entered_once_, [this] { entered_.set_value(); });
        released_.wait();
        if (slowFails) return protocol::Status::ioError("slow: connection timed out");
      }
      return std::shared_ptr<app::remote::Host>(std::make_shared<app::remote::LocalHost>());
    };
  }
  bool waitEntered() { return entered_future_.wait_for(kHangGuard) == std::future_status::ready; }
  void release() { release_.set_value(); }
  int calls() const { return calls_.load(); }

 private:
  std::atomic<int> calls_{0};
  std::once_flag entered_once_;
  std::promise<void> entered_;
  std::future<void> entered_future_ = entered_.get_future();
  std::promise<void> release_;
  std::shared_future<void> released_ = release_.get_future().share();
};

bool ready(const std::future<HostResult>& f) {
  return f.wait_for(kHangGuard) == std::future_status::ready;
}

}  // namespace

class HostOpenerServiceTest : public QObject {
  Q_OBJECT

 private slots:
  void anOpenInProgressDoesNotHoldUpAnotherHost() {
    GatedFactory gate;
    auto service = HostOpenerService::create(gate.factory());
    auto slow = std::async(std::launch::async, [&] { return service->open("slow"); });
    QVERIFY(gate.waitEntered());  // "slow" is connecting now
    auto fast = std::async(std::launch::async, [&] { return service->open("fast"); });
    QVERIFY2(ready(fast), "opening 'fast' waited for 'slow' to connect");
    QVERIFY(fast.get().isOk());
    auto local = service->open("local");
    QVERIFY(local.isOk());
    QCOMPARE(slow.wait_for(std::chrono::seconds(0)), std::future_status::timeout);  // still connecting
    gate.release();
    QVERIFY(ready(slow));
    QVERIFY(slow.get().isOk());
  }

  void callersOfOneNameShareOneOpen() {
    GatedFactory gate;
    auto service = HostOpenerService::create(gate.factory());
    auto first = std::async(std::launch::async, [&] { return service->open("slow"); });
    QVERIFY(gate.waitEntered());
    auto second = std::async(std::launch::async, [&] { return service->open("slow"); });
    gate.release();
    QVERIFY(ready(first) && ready(second));
    HostResult a = first.get();
    HostResult b = second.get();
    QVERIFY(a.isOk() && b.isOk());
    QCOMPARE(a.value().get(), b.value().get());  // one connection
    QCOMPARE(gate.calls(), 1);
    QCOMPARE(service->open("slow").value().get(), a.value().get());  // kept
    QCOMPARE(gate.calls(), 1);
  }

  void aFailureIsSharedButNotKept() {
    GatedFactory gate;
    auto service = HostOpenerService::create(gate.factory(/*slowFails=*/true));
    auto first = std::async(std::launch::async, [&] { return service->open("slow"); });
    QVERIFY(gate.waitEntered());
    gate.release();
    QVERIFY(ready(first));
    const HostResult failed = first.get();
    QVERIFY(!failed.isOk());
    QVERIFY2(failed.status().message().find("timed out") != std::string::npos,
             failed.status().message().c_str());
    // The next call tries again (the gate is open now: it fails again, after a second connect).
    QVERIFY(!service->open("slow").isOk());
    QCOMPARE(gate.calls(), 2);
  }

  void anOpenBegunBeforeClearIsNotKept() {
    GatedFactory gate;
    auto service = HostOpenerService::create(gate.factory());
    auto first = std::async(std::launch::async, [&] { return service->open("slow"); });
    QVERIFY(gate.waitEntered());
    service->clear();
    gate.release();
    QVERIFY(ready(first));
    QVERIFY(first.get().isOk());  // the caller gets its host...
    QVERIFY(service->open("slow").isOk());
    QCOMPARE(gate.calls(), 2);  // ...but the service forgot it: a second connect
  }

  void emptyNameIsRefused() {
    auto service = HostOpenerService::create(GatedFactory().factory());
    const HostResult r = service->open("");
    QVERIFY(!r.isOk());
    QCOMPARE(r.status().message(), std::string("no host name given"));
  }
};

}  // namespace fs::ui

QTEST_GUILESS_MAIN(fs::ui::HostOpenerServiceTest)
#include "host_opener_service_test.moc"
