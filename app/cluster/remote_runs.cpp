#include "app/cluster/remote_runs.h"

#include <algorithm>

#include "backend/protocol/config/run_location.h"
#include "backend/protocol/wire/run_dir.h"

namespace fs::app::cluster {
namespace {

QString fromStd(const std::string& s) {
  return QString::fromStdString(s);
}

std::string join(const std::string& dir, std::string_view name) {
  return dir.ends_with('/') ? dir + std::string(name) : dir + "/" + std::string(name);
}

}  // namespace

RemoteRunScan scanRemoteRunRoot(remote::Host& host, const QString& root, const std::atomic<bool>* cancel) {
  RemoteRunScan scan;
  scan.host = fromStd(host.name());
  scan.root = root;
  auto onHost = protocol::hostRunRoot(root.toStdString());  // NOTE [A run root under ~]
  if (!onHost) {
    scan.error = fromStd(host.name() + ": " + onHost.status().message());
    return scan;
  }
  std::string rootPath = onHost.value();
  if (auto r = host.run({"sh", "-c", "unset CDPATH; cd -- \"$1\" 2>/dev/null && pwd -P", "sh", rootPath});
      r && r->exit_code == 0) {
    std::string out = r->out;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    if (!out.empty()) rootPath = out;
    scan.root = fromStd(rootPath);
  }
  auto entries = host.list(rootPath);
  if (!entries) {
    scan.error =
        fromStd(host.name() + ": cannot list run root " + rootPath + ": " + entries.status().message());
    return scan;
  }
  std::vector<remote::FileInfo> dirs;
  for (auto& e : entries.value()) {
    if (e.is_dir && !e.name.starts_with('.')) dirs.push_back(std::move(e));
  }
  std::sort(dirs.begin(), dirs.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  QList<RunSummary> summaries;
  QHash<QString, RemoteRun> byDir;
  for (const auto& d : dirs) {
    if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
      scan.cancelled = true;
      break;
    }
    const std::string dir = join(rootPath, d.name);
    const std::string manifestPath = join(dir, protocol::kManifestFileName);
    auto text = host.readFile(manifestPath, 0, 1u << 20);
    if (!text && text.status().code() == protocol::Status::Code::kNotFound) continue;  // not a run directory
    protocol::StatusOr<protocol::RunManifest> manifest =
        text ? protocol::decodeManifest(text.value(), host.name() + ":" + manifestPath)
             : protocol::StatusOr<protocol::RunManifest>(text.status());
    RemoteRun run;
    run.summary = summarizeManifest(fromStd(d.name), fromStd(dir), manifest);
    run.summary.host = scan.host;
    const std::string launchPath = join(dir, protocol::kLaunchRecordFileName);
    if (auto launch = host.readFile(launchPath, 0, 1u << 20)) {
      auto record = protocol::decodeLaunchRecord(launch.value(), host.name() + ":" + launchPath);
      if (record) {
        run.launch = std::move(record.value());
      } else {
        run.launchError = fromStd(record.status().message());
      }
    } else if (launch.status().code() != protocol::Status::Code::kNotFound) {
      run.launchError = fromStd(launch.status().message());
    }
    summaries.push_back(run.summary);
    byDir.insert(run.summary.dir, std::move(run));
  }
  sortRuns(&summaries);
  for (const auto& s : summaries) scan.runs.push_back(byDir.take(s.dir));
  return scan;
}

}  // namespace fs::app::cluster
