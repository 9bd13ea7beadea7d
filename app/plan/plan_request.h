// What to plan: a config (or a config file), the topology, and which
// strategies and policies, as `flamingo-train plan` takes them.
//
// Thread-safety: plain values.
#pragma once

#include <QString>
#include <QStringList>
#include <optional>

#include "app/plan/fit.h"
#include "backend/protocol/config/config_types.h"

namespace fs::app {

struct PlanRequest {
  // The config to plan, written to a temporary YAML file the way the launcher
  // writes config.yaml; when absent, configFile is planned as it is (a run
  // directory's config.yaml).
  std::optional<protocol::RunConfig> config;
  QString configFile;
  int world = 0;           // 0: the config's launch.nnodes x nproc_per_node (the CLI's default)
  int nodes = 0;           // 0: the config's launch.nnodes
  QStringList strategies;  // empty: all
  QStringList policies;    // empty: all
  // Plan only what the config runs with: its sharding strategy under
  // parallel.mode fsdp, else single (one rank) or ddp (several), and its wrap
  // policy. Overrides strategies and policies; reads the config.
  bool runChoice = false;
  bool reference = true;  // also the reference's FSDP1 (false: --no-reference)
  // Fit to this cluster instead (plan --fit, app/plan/fit.h): world, nodes, strategies, policies
  // and reference are then not passed; the answer is a FitResult.
  std::optional<FitCluster> fit;
};

// The strategy and policy a config runs with (see runChoice) on `world`
// ranks (0: the config's launch.nnodes x nproc_per_node).
QString runStrategy(const protocol::RunConfig& config, int world = 0);
inline QString runPolicy(const protocol::RunConfig& config) {
  return QString::fromStdString(config.parallel.wrap_policy);
}

// The arguments after the executable: plan --config FILE [--world N] ... --json.
QStringList planArguments(const PlanRequest& request, const QString& configFile,
                          const std::optional<protocol::RunConfig>& readConfig = std::nullopt);

}  // namespace fs::app
