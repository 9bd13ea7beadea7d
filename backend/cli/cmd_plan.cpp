// flamingo-train plan: the FSDP unit layout and per-rank memory of each
// strategy x wrap policy, beside the reference's FSDP1, without building
// the model (backend/fsdp_plan; docs/planner.md).
#include <algorithm>
#include <charconv>
#include <ostream>
#include <sstream>

#include "backend/cli/args.h"
#include "backend/cli/cmd_plan_fit.h"
#include "backend/cli/commands.h"
#include "backend/cli/config_input.h"
#include "backend/fsdp_plan/plan.h"
#include "backend/fsdp_plan/plan_report.h"

namespace fs::cli {
const std::vector<OptionSpec> kPlanOptions = [] {
  std::vector<OptionSpec> options = {
      {"config", true, false, "FILE", "Run config (YAML, '-' = stdin); required"},
      {"world", true, false, "N", "Ranks in all (default: the config's launch.nnodes x nproc_per_node)"},
      {"nodes", true, false, "M", "Nodes; --world must divide by it (default: launch.nnodes)"},
      {"strategies", true, false, "LIST",
       "all (the FSDP strategies), or a comma list of full_shard, shard_grad_op, hybrid_shard, no_shard, and "
       "single / ddp (parallel.mode ddp on one rank / several) (default all)"},
      {"policies", true, false, "LIST",
       "all, or a comma list of openflamingo, transformer_layer, size_based, custom (default all; custom "
       "only "
       "with parallel.wrap_patterns)"},
      {"no-reference", false, false, "", "Leave out the reference's FSDP1 model"},
      {"device", true, false, "cpu|cuda",
       "cuda: also each rank's peak as the CUDA caching allocator holds it, allocated and reserved (default "
       "cpu)"},
      {"set", true, true, "KEY=VALUE", "Override a config field, e.g. --set parallel.limit_all_gathers=1"},
      {"json", false, false, "", "Print the plan as one JSON object (docs/planner.md)"},
      {"help", false, false, "", "Show this help"},
  };
  options.insert(options.end() - 1, planFitOptions().begin(), planFitOptions().end());
  return options;
}();

namespace {

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

protocol::StatusOr<int64_t> positiveInt(const std::string& flag, const std::string& value) {
  int64_t v = 0;
  const auto* end = value.data() + value.size();
  const auto [ptr, ec] = std::from_chars(value.data(), end, v);
  if (ec != std::errc() || ptr != end || v < 1)
    return protocol::Status::invalidArgument(flag + ": '" + value + "' is not a positive whole number");
  return v;
}

}  // namespace

int runPlan(const std::vector<std::string>& args, Io& io) {
  const std::string usage =
      "usage: flamingo-train plan --config FILE [--world N] [--nodes M] [--strategies all|LIST] "
      "[--policies all|LIST] [--device cpu|cuda] [--json]\n"
      "       flamingo-train plan --config FILE --fit (--gpu NAME | cluster figures) [--nodes M] "
      "[--gpus-per-node N] [--json] [--apply | --output FILE]\n";
  auto parsed = parseArgs(args, kPlanOptions);
  if (!parsed) {
    io.err << "flamingo-train plan: " << parsed.status().message() << "\n" << usage;
    return kExitUsage;
  }
  if (parsed->has("help")) {
    io.out
        << usage
        << "\nPlans FSDP for a run config without building the model: the unit layout of each wrap policy,\n"
           "then per-rank parameters, gradients, optimizer state, gathered peak and activations (with and\n"
           "without gradient checkpointing) for each strategy x policy, beside the reference's FSDP1.\n\n"
        << formatOptions(kPlanOptions);
    return kExitOk;
  }
  auto fail = [&](const std::string& message) {
    io.err << "flamingo-train plan: " << message << "\n" << usage;
    return kExitUsage;
  };
  if (!parsed->positionals.empty()) return fail("unexpected argument '" + parsed->positionals[0] + "'");
  if (!parsed->has("config")) return fail("--config: a run config is required");
  auto config = loadRunConfig(parsed->get("config"), parsed->all("set"), io);
  if (!config) return kExitFailure;
  if (parsed->has("fit")) {
    if (parsed->has("world"))
      return fail("--world: with --fit the ranks are the cluster's --nodes x --gpus-per-node");
    return runPlanFit(*parsed, *config, io);
  }
  for (const auto& option : planFitOptions()) {
    if (option.name != "fit" && parsed->has(option.name))
      return fail("--" + option.name + ": only with --fit");
  }

  fsdp_plan::PlanRequest req;
  req.config = *config;
  req.reference = !parsed->has("no-reference");
  req.topology.nodes = parsed->has("nodes") ? 0 : std::max<int64_t>(config->launch.nnodes, 1);
  req.topology.world = parsed->has("world") ? 0 : std::max<int64_t>(config->worldSize(), 1);
  for (const auto& [flag, target] : {std::pair<std::string, int64_t*>{"world", &req.topology.world},
                                     std::pair<std::string, int64_t*>{"nodes", &req.topology.nodes}}) {
    if (!parsed->has(flag)) continue;
    auto v = positiveInt("--" + flag, parsed->get(flag));
    if (!v) return fail(v.status().message());
    *target = *v;
  }
  if (parsed->has("world") && !parsed->has("nodes")) req.topology.nodes = 1;
  if (auto s = fsdp_plan::checkTopology(req.topology); !s) return fail(s.message());
  const auto strategies = parsed->get("strategies", "all");
  if (strategies != "all") {
    for (const auto& name : splitList(strategies)) {
      auto s = fsdp_plan::strategyFromName(name, "--strategies");
      if (!s) return fail(s.status().message());
      req.strategies.push_back(*s);
    }
    if (req.strategies.empty()) return fail("--strategies: empty list");
  }
  const auto policies = parsed->get("policies", "all");
  if (policies != "all") {
    for (const auto& name : splitList(policies)) {
      auto p = fsdp_plan::wrapPolicyFromName(name, config->parallel);
      if (!p) return fail("--policies: " + p.status().message());
      req.policies.push_back(name);
    }
    if (req.policies.empty()) return fail("--policies: empty list");
  }

  if (parsed->has("device")) {
    auto d = fsdp_plan::planDeviceFromName(parsed->get("device"), "--device");
    if (!d) return fail(d.status().message());
    req.device = *d;
  }

  auto plan = fsdp_plan::makePlan(req);
  if (!plan) {
    io.err << "flamingo-train plan: " << plan.status().message() << "\n";
    return kExitFailure;
  }
  if (parsed->has("json")) {
    io.out << fsdp_plan::planToJson(*plan).dump(2) << "\n";
    return kExitOk;
  }
  // The layout shown: the config's wrap policy when planned, else the first;
  // sharded as the config's strategy when planned, else the first.
  size_t layout = 0;
  for (size_t i = 0; i < plan->layouts.size(); ++i) {
    if (plan->layouts[i].policy == config->parallel.wrap_policy) layout = i;
  }
  size_t entry = plan->entries.size();
  for (size_t i = 0; i < plan->entries.size(); ++i) {
    if (plan->entries[i].layout != layout) continue;
    if (entry == plan->entries.size() ||
        fsdp_plan::strategyName(plan->entries[i].strategy) == config->parallel.sharding_strategy)
      entry = i;
  }
  io.out << fsdp_plan::formatPlan(*plan, layout, entry);
  return kExitOk;
}

}  // namespace fs::cli
