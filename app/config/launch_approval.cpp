#include "app/config/launch_approval.h"

#include <algorithm>

#include "app/common/user_dirs.h"

namespace fs::app {
namespace {

QSettings& openUserSettings(std::unique_ptr<QSettings>& owned) {
  owned = std::make_unique<QSettings>(userSettingsPath(), QSettings::IniFormat);
  return *owned;
}

}  // namespace

bool LaunchApprovalCheck::hasPipe() const {
  return std::any_of(items.begin(), items.end(),
                     [](const ApprovalItem& i) { return i.kind == ApprovalItem::Kind::kPipe; });
}

bool LaunchApprovalCheck::needsAnswer() const {
  return std::any_of(items.begin(), items.end(), [](const ApprovalItem& i) { return i.ask; });
}

std::vector<ApprovalItem> LaunchApprovalCheck::toAsk() const {
  std::vector<ApprovalItem> out;
  std::copy_if(items.begin(), items.end(), std::back_inserter(out),
               [](const ApprovalItem& i) { return i.ask; });
  return out;
}

LaunchApprovals::LaunchApprovals()
    : pipe_(openUserSettings(owned_)), slurm_(*owned_, PipeApprovals::kSlurmArgsKey) {}

LaunchApprovals::LaunchApprovals(QSettings& settings)
    : pipe_(settings), slurm_(settings, PipeApprovals::kSlurmArgsKey) {}

LaunchApprovals::~LaunchApprovals() = default;

LaunchApprovalCheck LaunchApprovals::check(const protocol::RunConfig& config,
                                           const std::set<std::string>& typedPipeSources,
                                           const std::set<std::string>& typedSlurmArgs, Scope scope) const {
  LaunchApprovalCheck out;
  std::set<std::string> seen;
  for (auto& s : protocol::pipeSources(config)) {
    if (!seen.insert(s.source).second) continue;
    ApprovalItem item;
    item.kind = ApprovalItem::Kind::kPipe;
    item.text = s.source;
    item.field = s.field;
    item.ask = !typedPipeSources.contains(s.source) && !pipe_.isApproved(s.source);
    item.pipe = std::move(s);
    out.items.push_back(std::move(item));
  }
  if (scope != Scope::kSlurmSubmit) return out;
  seen.clear();
  const auto& args = config.launch.slurm.extra_args;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (!seen.insert(args[i]).second) continue;
    ApprovalItem item;
    item.kind = ApprovalItem::Kind::kSlurmArg;
    item.text = args[i];
    item.field = "launch.slurm.extra_args[" + std::to_string(i) + "]";
    item.ask = !typedSlurmArgs.contains(args[i]) && !slurm_.isApproved(args[i]);
    out.items.push_back(std::move(item));
  }
  return out;
}

void LaunchApprovals::approve(const LaunchApprovalCheck& check) {
  std::vector<std::string> pipes, args;
  for (const auto& item : check.items)
    (item.kind == ApprovalItem::Kind::kPipe ? pipes : args).push_back(item.text);
  pipe_.remember(pipes);
  slurm_.remember(args);
}

}  // namespace fs::app
