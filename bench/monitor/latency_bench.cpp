// bench_follower_latency: a writer thread appends one step event every ~20 ms; for
// each, the time from its write() to the store's changed() on the GUI thread (through
// RunMonitor: poll timer, decode, batch, queued signal, store append). Prints median
// and p90 in ms. Usage: bench_follower_latency [lines=200] [poll_ms=50]
#include <fcntl.h>
#include <unistd.h>

#include <QCoreApplication>
#include <QEventLoop>
#include <QTemporaryDir>
#include <QTimer>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "app/monitor/run_monitor.h"
#include "app/monitor/series_names.h"
#include "backend/protocol/wire/event_codec.h"
#include "bench/monitor/bench_events.h"

namespace {

using Clock = std::chrono::steady_clock;

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[i];
}

}  // namespace

int main(int argc, char** argv) {
  QCoreApplication app(argc, argv);
  const int lines = argc > 1 ? std::atoi(argv[1]) : 200;
  const int poll_ms = argc > 2 ? std::atoi(argv[2]) : 50;
  if (lines <= 0 || poll_ms <= 0) {
    std::fprintf(stderr, "usage: bench_follower_latency [lines > 0] [poll_ms > 0]\n");
    return 2;
  }
  QTemporaryDir dir;
  if (!dir.isValid()) return 1;
  const std::string path = dir.path().toStdString() + "/events.jsonl";

  // Write times in ns since the clock's epoch; atomics since two threads touch them.
  std::vector<std::atomic<std::int64_t>> written(static_cast<std::size_t>(lines));
  std::vector<double> latency_ms(static_cast<std::size_t>(lines), -1);

  fs::app::RunMonitor::Options options;
  options.poll_interval_ms = poll_ms;
  options.follow_logs = false;
  options.process_check_interval_ms = 0;
  fs::app::RunMonitor monitor(options);
  auto* store = monitor.store();
  QEventLoop loop;
  std::size_t seen = 0;
  QObject::connect(store, &fs::app::SeriesStore::changed, &loop, [&] {
    const auto now = Clock::now();
    const std::size_t n = store->y(fs::app::series::loss("laion")).size();
    for (; seen < n; ++seen) {
      // The writer stamps a line before it writes it, so the stamp is there by now.
      const Clock::time_point at{Clock::duration(written[seen].load())};
      latency_ms[seen] = std::chrono::duration<double, std::milli>(now - at).count();
    }
    if (seen == static_cast<std::size_t>(lines)) loop.quit();
  });
  QTimer::singleShot(lines * 20 + 60000, &loop, [&] { loop.exit(1); });
  monitor.attach(dir.path());

  std::thread writer([&] {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return;
    fs::protocol::EventEncoder encoder;
    for (int i = 0; i < lines; ++i) {
      const std::string text = encoder.encode(fs::bench::realisticStep(i + 1));
      written[static_cast<std::size_t>(i)] = Clock::now().time_since_epoch().count();
      if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ::close(fd);
  });
  const int rc = loop.exec();
  writer.join();
  if (rc != 0) {
    std::fprintf(stderr, "timed out: %zu of %d lines reached the store\n", seen, lines);
    return 1;
  }
  std::printf(
      "%d lines, poll interval %d ms: write() -> store changed(): median %.1f ms, p90 %.1f ms, max %.1f ms; "
      "target median < 200 ms\n",
      lines, poll_ms, percentile(latency_ms, 0.5), percentile(latency_ms, 0.9),
      *std::max_element(latency_ms.begin(), latency_ms.end()));
  return 0;
}
