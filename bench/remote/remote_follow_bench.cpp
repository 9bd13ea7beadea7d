// bench_remote_follow: issue 24's figures for following a run over SSH, each beside the
// local follower's measured in the same process. Sets up two sshd hosts in network
// namespaces (tests/fixtures/ssh_hosts.h; needs root) and follows from host h0, whose
// file system is this machine's: the same files are read locally, through SFTP
// (HostRunDir) and through `flamingo-train stream` on an exec channel (StreamRunDir).
//  1. attach to a finished run of N step events until the store holds all of them;
//  2. live: a writer appends one step event every ~20 ms, write() -> store changed();
//  3. idle: attached to a run (events, 2 rank logs) whose files do not change, this
//     process's CPU (and the CPU of the sshd serving us) as % of one core.
// RunMonitor with the app's default options (50 ms poll, logs followed).
// Usage: bench_remote_follow [events=1000000] [runs=3] [lines=200] [idle_s=20] [stream_poll_ms=50]
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QTemporaryDir>
#include <QTimer>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "app/monitor/host_file_source.h"
#include "app/monitor/run_monitor.h"
#include "app/monitor/series_names.h"
#include "app/monitor/stream_file_source.h"
#include "app/remote/ssh_config.h"
#include "app/remote/ssh_host.h"
#include "backend/protocol/wire/event_codec.h"
#include "bench/monitor/bench_events.h"
#include "tests/fixtures/ssh_hosts.h"

namespace {

using Clock = std::chrono::steady_clock;
using Attach = std::function<void(fs::app::RunMonitor&, const std::string& dir)>;

double cpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[i];
}

// CPU seconds of the sshd processes in host h0's network namespace (the listener and
// the session serving us; its SFTP server is internal-sftp, in the same process) and
// of the flamingo-train stream processes it started.
double sshdCpuSeconds(const std::string& netns, int* streams = nullptr) {
  struct stat ns {};
  if (::stat(("/run/netns/" + netns).c_str(), &ns) != 0) return 0;
  const std::string want = "net:[" + std::to_string(ns.st_ino) + "]";
  double ticks = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string pid = entry.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code link_ec;
    if (std::filesystem::read_symlink(entry.path() / "ns/net", link_ec).string() != want) continue;
    std::ifstream in(entry.path() / "stat");
    std::string line;
    if (!std::getline(in, line)) continue;
    const auto close = line.rfind(')');
    const auto open = line.find('(');
    if (close == std::string::npos || open == std::string::npos) continue;
    const std::string comm = line.substr(open + 1, close - open - 1);
    if (comm != "sshd" && comm != "flamingo-train") continue;
    if (streams != nullptr && comm == "flamingo-train") ++*streams;
    std::istringstream rest(line.substr(close + 2));
    std::string field;
    double utime = 0, stime = 0;
    for (int f = 3; rest >> field; ++f) {  // fields 14 and 15: utime, stime
      if (f == 14) utime = std::stod(field);
      if (f == 15) {
        stime = std::stod(field);
        break;
      }
    }
    ticks += utime + stime;
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Waits (up to 10 s) until the stream processes of a follower just destroyed have
// exited, so that their CPU does not drop out of the next measurement's sum.
void waitForStreamsToEnd(const std::string& netns) {
  for (int i = 0; i < 1000; ++i) {
    int streams = 0;
    sshdCpuSeconds(netns, &streams);
    if (streams == 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

bool writeRun(const std::string& dir, long n) {
  std::ofstream out(dir + "/events.jsonl", std::ios::binary);
  fs::protocol::EventEncoder encoder(0, [t = std::int64_t{1717000000000}]() mutable { return t += 1250; });
  fs::protocol::RunStartedEvent started{"bench", "0.1.0",          1, 1, {"localhost"}, "sha256:0", n,
                                        n,       {"laion", "mmc4"}};
  out << encoder.encode(started);
  for (long i = 1; i <= n; ++i) out << encoder.encode(fs::bench::realisticStep(i));
  return static_cast<bool>(out);
}

// Runs the event loop until the store holds n losses; false after `limit_ms`.
bool waitForPoints(fs::app::RunMonitor& monitor, std::size_t n, int limit_ms) {
  auto* store = monitor.store();
  if (store->y(fs::app::series::loss("mmc4")).size() == n) return true;
  QEventLoop loop;
  QObject::connect(store, &fs::app::SeriesStore::changed, &loop, [&] {
    if (store->y(fs::app::series::loss("mmc4")).size() == n) loop.quit();
  });
  QTimer::singleShot(limit_ms, &loop, [&] { loop.exit(1); });
  return loop.exec() == 0;
}

struct Ingest {
  double wall_s = 0, cpu_s = 0, sshd_s = 0;
};

std::optional<Ingest> ingestOnce(const Attach& attach, const std::string& dir, long n,
                                 const std::string& ns) {
  waitForStreamsToEnd(ns);
  fs::app::RunMonitor monitor;
  const double cpu = cpuSeconds();
  const double sshd = sshdCpuSeconds(ns);
  QElapsedTimer timer;
  timer.start();
  attach(monitor, dir);
  if (!waitForPoints(monitor, static_cast<std::size_t>(n), 300000)) {
    std::fprintf(stderr, "attach timed out: the store holds %zu of %ld points\n",
                 monitor.store()->y(fs::app::series::loss("mmc4")).size(), n);
    return std::nullopt;
  }
  return Ingest{static_cast<double>(timer.nsecsElapsed()) / 1e9, cpuSeconds() - cpu,
                sshdCpuSeconds(ns) - sshd};
}

// Latencies in ms of `lines` events appended to a fresh `dir`/events.jsonl, after a
// first event (not timed) has reached the store: a follower's start (for the exec
// stream, starting the engine) belongs to attaching, not to live latency.
std::optional<std::vector<double>> latencies(const Attach& attach, const std::string& dir, int lines) {
  const std::string path = dir + "/events.jsonl";
  std::vector<std::atomic<std::int64_t>> written(static_cast<std::size_t>(lines));
  std::vector<double> latency_ms(static_cast<std::size_t>(lines), -1);
  fs::app::RunMonitor monitor;
  auto* store = monitor.store();
  QEventLoop loop;
  std::size_t seen = 0;
  bool warm = false;
  QObject::connect(store, &fs::app::SeriesStore::changed, &loop, [&] {
    const auto now = Clock::now();
    const std::size_t all = store->y(fs::app::series::loss("laion")).size();
    if (!warm) {
      warm = all >= 1;
      if (warm) loop.exit(2);
      return;
    }
    const std::size_t n = all - 1;
    for (; seen < n; ++seen) {
      const Clock::time_point at{Clock::duration(written[seen].load())};
      latency_ms[seen] = std::chrono::duration<double, std::milli>(now - at).count();
    }
    if (seen == static_cast<std::size_t>(lines)) loop.quit();
  });
  QTimer::singleShot(lines * 20 + 60000, &loop, [&] { loop.exit(1); });
  attach(monitor, dir);
  fs::protocol::EventEncoder encoder;
  {
    std::ofstream first(path, std::ios::binary);
    first << encoder.encode(fs::bench::realisticStep(1));
  }
  if (loop.exec() != 2) {
    std::fprintf(stderr, "live latency: the first event did not reach the store\n");
    return std::nullopt;
  }
  std::thread writer([&] {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return;
    for (int i = 0; i < lines; ++i) {
      const std::string text = encoder.encode(fs::bench::realisticStep(i + 2));
      written[static_cast<std::size_t>(i)] = Clock::now().time_since_epoch().count();
      if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ::close(fd);
  });
  const int rc = loop.exec();
  writer.join();
  if (rc != 0) {
    std::fprintf(stderr, "live latency timed out: %zu of %d lines reached the store\n", seen, lines);
    return std::nullopt;
  }
  return latency_ms;
}

struct Idle {
  double cpu_pct = 0, sshd_pct = 0;
};

// Attached to the finished run in `dir` (n events), caught up, then idle_s of wall time.
std::optional<Idle> idleCpu(const Attach& attach, const std::string& dir, long n, int idle_s,
                            const std::string& ns) {
  waitForStreamsToEnd(ns);
  fs::app::RunMonitor monitor;
  attach(monitor, dir);
  if (!waitForPoints(monitor, static_cast<std::size_t>(n), 120000)) {
    std::fprintf(stderr, "idle: the run in %s was not read within 120 s\n", dir.c_str());
    return std::nullopt;
  }
  QEventLoop settle;  // let the poll after catching up pass
  QTimer::singleShot(500, &settle, &QEventLoop::quit);
  settle.exec();
  const double cpu = cpuSeconds();
  const double sshd = sshdCpuSeconds(ns);
  QElapsedTimer timer;
  timer.start();
  QEventLoop loop;
  QTimer::singleShot(idle_s * 1000, &loop, &QEventLoop::quit);
  loop.exec();
  const double wall = static_cast<double>(timer.nsecsElapsed()) / 1e9;
  return Idle{100.0 * (cpuSeconds() - cpu) / wall, 100.0 * (sshdCpuSeconds(ns) - sshd) / wall};
}

class NeverAsked : public fs::app::remote::Prompter {
 public:
  fs::app::remote::HostKeyAnswer hostKey(const fs::app::remote::HostKeyQuestion&) override {
    return fs::app::remote::HostKeyAnswer::kReject;
  }
  std::optional<fs::app::remote::Secret> passphrase(const std::string&, int) override { return std::nullopt; }
};

}  // namespace

int main(int argc, char** argv) {
  QCoreApplication app(argc, argv);
  const long n = argc > 1 ? std::atol(argv[1]) : 1000000;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 3;
  const int lines = argc > 3 ? std::atoi(argv[3]) : 200;
  const int idle_s = argc > 4 ? std::atoi(argv[4]) : 20;
  const int stream_poll_ms = argc > 5 ? std::atoi(argv[5]) : fs::app::StreamSourceOptions{}.poll_ms;
  if (n <= 0 || runs <= 0 || lines <= 0 || idle_s <= 0 || stream_poll_ms <= 0) {
    std::fprintf(stderr,
                 "usage: bench_remote_follow [events > 0] [runs > 0] [lines > 0] [idle_s > 0] "
                 "[stream_poll_ms > 0]\n");
    return 2;
  }
  if (geteuid() != 0) {
    std::fprintf(stderr, "bench_remote_follow runs sshd in network namespaces and must run as root\n");
    return 1;
  }
  fs::testing::SshHosts hosts(2);
  if (!hosts.ok()) {
    std::fprintf(stderr, "cannot set up the SSH hosts (sshd in network namespaces): %s\n",
                 hosts.error().c_str());
    return 1;
  }
  const std::string ns = "fsn" + std::to_string(getpid()) + "h0";  // SshHosts' naming
  fs::app::remote::SshConfigOptions config_options;
  config_options.user_config = hosts.configPath();
  config_options.system_config.clear();
  auto config = fs::app::remote::SshConfig::load(config_options);
  if (!config) {
    std::fprintf(stderr, "ssh config %s: %s\n", hosts.configPath().c_str(),
                 config.status().message().c_str());
    return 1;
  }
  auto ssh = fs::app::remote::SshHost::open("h0", std::move(config.value()), std::make_shared<NeverAsked>());
  if (!ssh) {
    std::fprintf(stderr, "cannot open h0: %s\n", ssh.status().message().c_str());
    return 1;
  }
  fs::app::remote::SshHost& host = *ssh.value();
  if (auto s = host.connect(); !s) {
    std::fprintf(stderr, "cannot connect to h0: %s\n", s.message().c_str());
    return 1;
  }
  const Attach local = [](fs::app::RunMonitor& m, const std::string& dir) {
    m.attach(QString::fromStdString(dir));
  };
  const Attach remote = [&host](fs::app::RunMonitor& m, const std::string& dir) {
    m.attach(std::make_shared<fs::app::HostRunDir>(host, dir));
  };
  fs::app::StreamSourceOptions stream_options;
  stream_options.engine = {FS_BENCH_ENGINE};  // h0's file system is this machine's
  stream_options.poll_ms = stream_poll_ms;
  const Attach stream = [&host, &stream_options](fs::app::RunMonitor& m, const std::string& dir) {
    m.attach(std::make_shared<fs::app::StreamRunDir>(host, dir, stream_options));
  };
  const Attach* const transports[3] = {&local, &remote, &stream};
  const char* const names[3] = {"local", "sftp", "stream"};

  QTemporaryDir root;
  const std::string base = root.path().toStdString();
  for (const char* d : {"/finished", "/live-local", "/live-sftp", "/live-stream", "/idle"})
    std::filesystem::create_directory(base + d);
  const long idle_events = 1000;
  if (!root.isValid() || !writeRun(base + "/finished", n) || !writeRun(base + "/idle", idle_events)) {
    std::fprintf(stderr, "cannot write the runs under %s\n", base.c_str());
    return 1;
  }
  // The idle run has rank logs too, as a real one does: each poll lists logs/ and stats them.
  std::filesystem::create_directory(base + "/idle/logs");
  for (int rank = 0; rank < 2; ++rank) {
    std::ofstream log(base + "/idle/logs/rank-" + std::to_string(rank) + ".log");
    for (int i = 0; i < 100; ++i) log << "rank " << rank << ": step " << i << " done\n";
  }
  const double mb = static_cast<double>(std::filesystem::file_size(base + "/finished/events.jsonl")) / 1e6;
  std::printf("finished run: %ld step events, %.1f MB\n", n, mb);

  // 1. Alternating local, SFTP and stream, so that a busy spell of the shared machine
  //    hits all three.
  std::vector<double> wall[3], cpu[3], sshd[3];
  for (int r = 0; r < runs; ++r) {
    for (int which = 0; which < 3; ++which) {
      auto got = ingestOnce(*transports[which], base + "/finished", n, ns);
      if (!got) return 1;
      wall[which].push_back(got->wall_s);
      cpu[which].push_back(got->cpu_s);
      sshd[which].push_back(got->sshd_s);
      std::printf("attach run %d %-6s: %.3f s (%.3f CPU s here, %.3f CPU s sshd + stream)\n", r + 1,
                  names[which], got->wall_s, got->cpu_s, got->sshd_s);
      std::fflush(stdout);
    }
  }
  // 2. Live latency.
  std::vector<double> live[3];
  for (int which = 0; which < 3; ++which) {
    auto got = latencies(*transports[which], base + "/live-" + names[which], lines);
    if (!got) return 1;
    live[which] = std::move(*got);
  }
  // 3. Idle CPU.
  Idle idle[3];
  for (int which = 0; which < 3; ++which) {
    auto got = idleCpu(*transports[which], base + "/idle", idle_events, idle_s, ns);
    if (!got) return 1;
    idle[which] = *got;
  }

  auto median = [](const std::vector<double>& v) { return percentile(v, 0.5); };
  std::printf("\ncommand: ");
  for (int i = 0; i < argc; ++i) std::printf("%s%s", i ? " " : "", argv[i]);
  std::printf("\nSSH: host h0 (%s, sshd in a network namespace on this machine), %u cores\n\n",
              hosts.hostAddress(0).c_str(), std::thread::hardware_concurrency());
  std::printf("stream: flamingo-train stream --poll-ms %d over an exec channel, one per followed file\n\n",
              stream_poll_ms);
  std::printf(
      "| measure | local | SFTP (h0) | exec stream (h0) | target (SSH) |\n| --- | ---: | ---: | ---: | --- "
      "|\n");
  std::printf(
      "| attach to a finished run of %ld steps (%.0f MB), median of %d: s | %.3f | %.3f | %.3f | < 3 s |\n",
      n, mb, runs, median(wall[0]), median(wall[1]), median(wall[2]));
  std::printf("| ... CPU s of this process | %.3f | %.3f | %.3f | |\n", median(cpu[0]), median(cpu[1]),
              median(cpu[2]));
  std::printf("| ... CPU s of sshd (+ the stream process) | - | %.3f | %.3f | |\n", median(sshd[1]),
              median(sshd[2]));
  std::printf(
      "| live, %d events 20 ms apart: write() -> changed(), median ms | %.1f | %.1f | %.1f | < 250 ms |\n",
      lines, median(live[0]), median(live[1]), median(live[2]));
  std::printf("| ... p90 ms | %.1f | %.1f | %.1f | |\n", percentile(live[0], 0.9), percentile(live[1], 0.9),
              percentile(live[2], 0.9));
  std::printf(
      "| idle following (2 rank logs), %d s: CPU of this process, %% of one core | %.2f | %.2f | %.2f | < 2 "
      "%% |\n",
      idle_s, idle[0].cpu_pct, idle[1].cpu_pct, idle[2].cpu_pct);
  std::printf("| ... CPU of sshd (+ the stream processes), %% of one core | - | %.2f | %.2f | |\n",
              idle[1].sshd_pct, idle[2].sshd_pct);
  return 0;
}
