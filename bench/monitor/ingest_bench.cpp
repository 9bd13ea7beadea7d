// bench_monitor_ingest: open a finished run with N step events and time until the
// series store holds all of them (RunMonitor: follower thread, fast step decoder,
// column batches, store appends). Usage: bench_monitor_ingest [N=1000000] [runs=5]
#include <sys/resource.h>

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QTemporaryDir>
#include <QThread>
#include <QTimer>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "app/monitor/run_monitor.h"
#include "app/monitor/series_names.h"
#include "backend/protocol/wire/event_codec.h"
#include "bench/monitor/bench_events.h"

namespace {

// CPU seconds this process used so far (all threads): on a shared, busy machine the
// wall time says how loaded it was, this says how much work the ingest is.
double cpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  QCoreApplication app(argc, argv);
  const long n = argc > 1 ? std::atol(argv[1]) : 1000000;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 5;
  if (n <= 0 || runs <= 0) {
    std::fprintf(stderr, "usage: bench_monitor_ingest [events > 0] [runs > 0]\n");
    return 2;
  }
  QTemporaryDir dir;
  if (!dir.isValid()) {
    std::fprintf(stderr, "cannot create a temporary directory\n");
    return 1;
  }
  const std::string path = dir.path().toStdString() + "/events.jsonl";
  {
    std::ofstream out(path, std::ios::binary);
    fs::protocol::EventEncoder encoder(0, [t = std::int64_t{1717000000000}]() mutable { return t += 1250; });
    fs::protocol::RunStartedEvent started{"bench", "0.1.0",          1, 1, {"localhost"}, "sha256:0", n,
                                          n,       {"laion", "mmc4"}};
    out << encoder.encode(started);
    for (long i = 1; i <= n; ++i) out << encoder.encode(fs::bench::realisticStep(i));
    if (!out) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      return 1;
    }
  }
  std::ifstream probe(path, std::ios::binary | std::ios::ate);
  const double mb = static_cast<double>(probe.tellg()) / 1e6;
  std::printf("file: %ld step events, %.1f MB\n", n, mb);

  std::vector<double> seconds;
  std::vector<double> cpu;
  for (int r = 0; r < runs; ++r) {
    fs::app::RunMonitor::Options options;
    options.follow_logs = false;
    options.process_check_interval_ms = 0;
    options.stall_check_interval_ms = 0;
    fs::app::RunMonitor monitor(options);
    QEventLoop loop;
    auto* store = monitor.store();
    QObject::connect(store, &fs::app::SeriesStore::changed, &loop, [&] {
      if (store->y(fs::app::series::loss("mmc4")).size() == static_cast<std::size_t>(n)) loop.quit();
    });
    QTimer::singleShot(120000, &loop, [&] { loop.exit(1); });
    QElapsedTimer timer;
    const double cpu_before = cpuSeconds();
    timer.start();
    monitor.attach(dir.path());
    if (loop.exec() != 0) {
      std::fprintf(stderr, "timed out: the store holds %zu of %ld points\n",
                   store->y(fs::app::series::loss("mmc4")).size(), n);
      return 1;
    }
    const double s = static_cast<double>(timer.nsecsElapsed()) / 1e9;
    seconds.push_back(s);
    cpu.push_back(cpuSeconds() - cpu_before);
    std::printf("run %d: %.3f s (%.3f CPU s), %zu points in %zu series\n", r + 1, s, cpu.back(),
                store->totalPoints(), store->names().size());
  }
  std::sort(seconds.begin(), seconds.end());
  std::sort(cpu.begin(), cpu.end());
  const double median = seconds[seconds.size() / 2];
  std::printf(
      "median open-to-store-filled: %.3f s (%.0f events/s, %.0f MB/s; %.3f CPU s) over %d runs, %d threads "
      "available; target < 1 s\n",
      median, static_cast<double>(n) / median, mb / median, cpu[cpu.size() / 2], runs,
      QThread::idealThreadCount());
  return 0;
}
