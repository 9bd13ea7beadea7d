#include "app/config/pipe_approval.h"

#include <QStringList>
#include <algorithm>

namespace fs::app {
bool PipeApprovals::isApproved(const std::string& source) const {
  return settings_.value(key_).toStringList().contains(QString::fromStdString(source));
}

void PipeApprovals::remember(const std::vector<std::string>& sources) {
  QStringList list = settings_.value(key_).toStringList();
  bool added = false;
  for (const auto& s : sources) {
    const QString text = QString::fromStdString(s);
    if (list.contains(text)) continue;
    list << text;
    added = true;
  }
  if (!added) return;
  list.sort();
  settings_.setValue(key_, list);
  settings_.sync();
}

std::vector<std::string> PipeApprovals::approved() const {
  std::vector<std::string> out;
  for (const QString& s : settings_.value(key_).toStringList()) out.push_back(s.toStdString());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<protocol::PipeSource> pipeSourcesToApprove(const protocol::RunConfig& config,
                                                       const std::set<std::string>& typed,
                                                       const PipeApprovals& approvals) {
  std::vector<protocol::PipeSource> out;
  std::set<std::string> seen;
  for (auto& s : protocol::pipeSources(config)) {
    if (!seen.insert(s.source).second) continue;
    if (typed.contains(s.source) || approvals.isApproved(s.source)) continue;
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<std::string> slurmArgsToApprove(const protocol::RunConfig& config,
                                            const std::set<std::string>& typed,
                                            const PipeApprovals& approvals) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& item : config.launch.slurm.extra_args) {
    if (!seen.insert(item).second) continue;
    if (typed.contains(item) || approvals.isApproved(item)) continue;
    out.push_back(item);
  }
  return out;
}

}  // namespace fs::app
