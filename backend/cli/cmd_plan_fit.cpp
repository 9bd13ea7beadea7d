#include "backend/cli/cmd_plan_fit.h"

#include <algorithm>
#include <charconv>
#include <sstream>

#include "backend/fsdp_plan/fit.h"
#include "backend/fsdp_plan/fit_report.h"
#include "backend/protocol/config/config_override.h"
#include "backend/protocol/config/config_yaml.h"
#include "backend/protocol/config/validate.h"

namespace fs::cli {
namespace {

// Flag -> cluster field (fsdp_plan::setClusterField); --nodes is plan's own flag.
const std::vector<std::pair<std::string, std::string>>& clusterFlags() {
  static const std::vector<std::pair<std::string, std::string>> flags = {
      {"nodes", "nodes"},
      {"gpus-per-node", "gpus_per_node"},
      {"memory-gib", "memory_gib"},
      {"host-memory-gib", "host_memory_gib"},
      {"intra-node-gbs", "intra_node_gbs"},
      {"inter-node-gbs", "inter_node_gbs"},
      {"host-gbs", "host_gbs"},
      {"peak-tflops-fp32", "peak_tflops_fp32"},
      {"peak-tflops-16", "peak_tflops_16"},
      {"efficiency", "efficiency"}};
  return flags;
}

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace

const std::vector<OptionSpec>& planFitOptions() {
  static const std::vector<OptionSpec> options = {
      {"fit", false, false, "",
       "Fit the run to a cluster: every strategy x wrap policy x micro-batch x checkpointing x precision x "
       "cpu_offload that fits, fastest first, and those that do not (docs/planner.md \"Fit to a cluster\")"},
      {"gpu", true, false, "NAME",
       "--fit: start from a catalog GPU (A100-SXM-40GB, A100-SXM-80GB, H100-SXM-80GB, H200-SXM-141GB, "
       "L40S-48GB, RTX4090-24GB); without it give every figure below"},
      {"gpus-per-node", true, false, "N",
       "--fit: GPUs (ranks) per node (default: the GPU's reference system)"},
      {"memory-gib", true, false, "X", "--fit: memory per GPU, GiB"},
      {"host-memory-gib", true, false, "X", "--fit: host memory per node, GiB"},
      {"intra-node-gbs", true, false, "X",
       "--fit: bandwidth between GPUs of a node, GB/s per GPU and direction"},
      {"inter-node-gbs", true, false, "X", "--fit: bandwidth between nodes, GB/s per GPU and direction"},
      {"host-gbs", true, false, "X", "--fit: GPU to host bandwidth (cpu_offload), GB/s per direction"},
      {"peak-tflops-fp32", true, false, "X", "--fit: dense FP32 peak, TFLOP/s"},
      {"peak-tflops-16", true, false, "X", "--fit: dense BF16 / FP16 peak, TFLOP/s"},
      {"efficiency", true, false, "X", "--fit: share of peak FLOP/s the compute reaches (default 0.4)"},
      {"precisions", true, false, "LIST",
       "--fit: optim.precision values to try (default: the config's, fp32, amp_bf16, bf16)"},
      {"headroom", true, false, "X",
       "--fit: share added to each planned peak before it is compared (default 0.1: the planned peak "
       "was up to 8.3 % under the measured one)"},
      {"top", true, false, "N", "--fit: choices and misfits to print (default 5)"},
      {"choice", true, false, "N", "--fit: the ranked choice --apply / --output write (default 1)"},
      {"apply", false, false, "", "--fit: write the chosen values into --config"},
      {"output", true, false, "FILE", "--fit: write the config with the chosen values to FILE"},
  };
  return options;
}

int runPlanFit(const ParsedArgs& parsed, const protocol::RunConfig& config, Io& io) {
  auto fail = [&](const std::string& message) {
    io.err << "flamingo-train plan --fit: " << message << "\n";
    return kExitUsage;
  };
  fsdp_plan::FitRequest req;
  req.config = config;
  if (parsed.has("gpu")) {
    auto gpu = fsdp_plan::gpuByName(parsed.get("gpu"), "--gpu");
    if (!gpu) return fail(gpu.status().message());
    req.cluster = fsdp_plan::clusterFromGpu(*gpu);
  } else {
    std::string missing;
    for (const auto& [flag, field] : clusterFlags()) {
      if (flag != "nodes" && flag != "efficiency" && flag != "inter-node-gbs" && !parsed.has(flag))
        missing += (missing.empty() ? "--" : ", --") + flag;
    }
    if (!missing.empty())
      return fail("without --gpu NAME every cluster figure is needed; missing " + missing);
  }
  for (const auto& [flag, field] : clusterFlags()) {
    if (!parsed.has(flag)) continue;
    if (auto s = fsdp_plan::setClusterField(&req.cluster, field, parsed.get(flag)); !s)
      return fail("--" + flag + ": " + s.message());
  }
  if (auto s = fsdp_plan::checkCluster(req.cluster); !s) return fail("cluster " + s.message());
  req.device = fsdp_plan::PlanDevice::kCuda;
  if (parsed.has("device")) {
    auto d = fsdp_plan::planDeviceFromName(parsed.get("device"), "--device");
    if (!d) return fail(d.status().message());
    req.device = *d;
  }
  if (parsed.has("strategies") && parsed.get("strategies") != "all")
    req.strategies = splitList(parsed.get("strategies"));
  if (parsed.has("policies") && parsed.get("policies") != "all")
    req.policies = splitList(parsed.get("policies"));
  if (parsed.has("precisions")) req.precisions = splitList(parsed.get("precisions"));
  if (parsed.has("headroom")) {
    const std::string v = parsed.get("headroom");
    double h = 0;
    const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), h);
    if (v.empty() || ec != std::errc() || ptr != v.data() + v.size())
      return fail("--headroom: '" + v + "' is not a number");
    req.headroom = h;
  }
  auto count = [&](const std::string& flag, long fallback) { return countOption(parsed, flag, fallback); };
  auto top = count("top", 5);
  if (!top) return fail(top.status().message());
  auto choice = count("choice", 1);
  if (!choice) return fail(choice.status().message());

  auto fit = fsdp_plan::fitToCluster(req);
  if (!fit) {
    io.err << "flamingo-train plan --fit: " << fit.status().message() << "\n";
    return kExitFailure;
  }
  if (parsed.has("json")) {
    io.out << fsdp_plan::fitToJson(*fit, config).dump(2) << "\n";
  } else {
    io.out << fsdp_plan::formatFit(*fit, static_cast<size_t>(*top));
  }
  if (fit->ranked.empty()) {
    io.err << "flamingo-train plan --fit: " << fsdp_plan::noFitMessage(*fit) << "\n";
    return kExitFailure;
  }
  if (!parsed.has("apply") && !parsed.has("output")) return kExitOk;
  if (*choice < 1 || static_cast<size_t>(*choice) > fit->ranked.size())
    return fail("--choice: " + std::to_string(*choice) + " is not a ranked choice (1.." +
                std::to_string(fit->ranked.size()) + ")");
  const auto& chosen = fit->ranked[static_cast<size_t>(*choice) - 1];
  protocol::RunConfig applied = config;
  const auto problems = protocol::applyOverrides(&applied, chosen.assignments(config, fit->cluster));
  if (!problems.empty()) {
    io.err << "flamingo-train plan --fit: " << protocol::formatProblems(problems) << "\n";
    return kExitFailure;
  }
  // NOTE [Fit writes a valid config]: the choice sets the node count, not the
  // nodes; an SSH launch whose launch.hosts no longer matches launch.nnodes
  // (or any other rule the new values break) is refused before anything is
  // written, naming the field: the hosts are the user's to give (--set).
  std::vector<protocol::Problem> introduced;
  const auto before = protocol::validateConfig(config);
  for (const auto& p : protocol::validateConfig(applied)) {
    const bool old = std::any_of(before.begin(), before.end(), [&](const protocol::Problem& b) {
      return b.isError() && b.path == p.path && b.message == p.message;
    });
    if (p.isError() && !old) introduced.push_back(p);
  }
  if (!introduced.empty()) {
    io.err << "flamingo-train plan --fit: choice " << *choice << " (" << chosen.label()
           << ") would leave the config invalid, nothing written:\n"
           << protocol::formatProblems(introduced) << "\n";
    if (config.launch.kind == "ssh" && static_cast<int64_t>(config.launch.hosts.size()) != fit->cluster.nodes)
      io.err << "give the " << fit->cluster.nodes
             << " hosts with --set 'launch.hosts=[HOST,...]' (node 0 first)\n";
    return kExitFailure;
  }
  const std::string target = parsed.has("output") ? parsed.get("output") : parsed.get("config");
  if (target == "-") return fail("--apply: the config came from stdin; give --output FILE");
  if (auto s = protocol::saveConfigFile(applied, target); !s) {
    io.err << "flamingo-train plan --fit: " << target << ": " << s.message() << "\n";
    return kExitFailure;
  }
  io.err << "wrote choice " << *choice << " (" << chosen.label() << ") to " << target << "\n";
  return kExitOk;
}

}  // namespace fs::cli
