#include "app/plan/plan_request.h"

namespace fs::app {

QString runStrategy(const protocol::RunConfig& config, int world) {
  if (config.parallel.mode == "fsdp") return QString::fromStdString(config.parallel.sharding_strategy);
  if (world <= 0) world = static_cast<int>(config.worldSize());
  return world > 1 ? QStringLiteral("ddp") : QStringLiteral("single");
}

QStringList planArguments(const PlanRequest& request, const QString& configFile,
                          const std::optional<protocol::RunConfig>& readConfig) {
  QStringList args{QStringLiteral("plan"), QStringLiteral("--config"), configFile};
  if (request.fit) return args + fitArguments(*request.fit);
  if (request.world > 0) args << QStringLiteral("--world") << QString::number(request.world);
  if (request.nodes > 0) args << QStringLiteral("--nodes") << QString::number(request.nodes);
  QStringList strategies = request.strategies;
  QStringList policies = request.policies;
  if (request.runChoice && readConfig) {
    strategies = {runStrategy(*readConfig, request.world)};
    policies = {runPolicy(*readConfig)};
  }
  args << QStringLiteral("--strategies")
       << (strategies.isEmpty() ? QStringLiteral("all") : strategies.join(QLatin1Char(',')));
  args << QStringLiteral("--policies")
       << (policies.isEmpty() ? QStringLiteral("all") : policies.join(QLatin1Char(',')));
  if (!request.reference) args << QStringLiteral("--no-reference");
  args << QStringLiteral("--json");
  return args;
}

}  // namespace fs::app
