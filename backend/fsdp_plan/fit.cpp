#include "backend/fsdp_plan/fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <set>

#include "backend/fsdp_plan/plan_report.h"

namespace fs::fsdp_plan {
namespace {

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g s", s);
  return buf;
}

std::string plainNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string percent(double r) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f %%", r * 100);
  return buf;
}

protocol::RunConfig configFor(const protocol::RunConfig& base, const FitChoice& c, const Cluster& cluster) {
  protocol::RunConfig cfg = base;
  const bool replicated = c.strategy == "single" || c.strategy == "ddp";
  cfg.parallel.mode = replicated ? "ddp" : "fsdp";
  if (!replicated) {
    cfg.parallel.sharding_strategy = c.strategy;
    cfg.parallel.wrap_policy = c.policy;
  }
  cfg.parallel.cpu_offload = c.cpuOffload;
  cfg.model.gradient_checkpointing = c.checkpointing;
  cfg.optim.precision = c.precision;
  cfg.optim.grad_accum_steps = c.accumulation;
  for (size_t i = 0; i < cfg.data.datasets.size() && i < c.microBatch.size(); ++i)
    cfg.data.datasets[i].batch_size = c.microBatch[i];
  cfg.launch.nnodes = cluster.nodes;
  cfg.launch.nproc_per_node = cluster.gpusPerNode;
  return cfg;
}

// Device bytes of one entry (NOTE [Fit search]).
int64_t deviceBytesOf(const PlanEntry& e, PlanDevice device, bool offload) {
  if (!offload) return device == PlanDevice::kCuda && e.device ? e.device->reserved : e.memory.peak();
  const RankMemory& m = e.memory;
  if (device == PlanDevice::kCpu) return m.inputs + m.loader + m.stepPeak;
  std::vector<int64_t> requests;
  for (const int64_t b : {m.inputs, m.loader, m.stepPeak})
    if (b > 0) requests.push_back(b);
  return cudaLiveSet(requests).reserved;
}

// Why `c` ranks after `best`: the term that grew most.
std::string reasonAfter(const FitChoice& c, const FitChoice& best, size_t rank) {
  const double slower = best.time.totalS() > 0 ? c.time.totalS() / best.time.totalS() - 1 : 0;
  const std::pair<const char*, double> terms[] = {
      {"compute", c.time.computeS - best.time.computeS},
      {"recompute for checkpointing", c.time.recomputeS - best.time.recomputeS},
      {"exposed communication", c.time.exposedCommS - best.time.exposedCommS},
      {"host copies for cpu_offload", c.time.offloadS - best.time.offloadS}};
  const auto* most = &terms[0];
  for (const auto& t : terms)
    if (t.second > most->second) most = &t;
  std::string r = "#" + std::to_string(rank) + ": ";
  if (most->second <= 0) {
    r += "as fast as #1, less margin (" + formatBytes(c.margin) + ")";
  } else {
    r += percent(slower) + " slower than #1, mostly " + most->first + " (+" + seconds(most->second) + ")";
    r += "; margin " + formatBytes(c.margin);
  }
  return r;
}

int64_t withHeadroom(int64_t bytes, double headroom) {
  return static_cast<int64_t>(std::ceil(static_cast<double>(bytes) * (1.0 + headroom)));
}

std::string headroomText(double headroom) {
  return headroom > 0 ? " + " + percent(headroom) + " headroom" : "";
}

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> d;
  for (int64_t i = 1; i <= n; ++i)
    if (n % i == 0) d.push_back(i);
  return d;
}

}  // namespace

std::vector<std::string> FitChoice::assignments(const protocol::RunConfig& config,
                                                const Cluster& cluster) const {
  const bool replicated = strategy == "single" || strategy == "ddp";
  std::vector<std::string> a = {"launch.nnodes=" + std::to_string(cluster.nodes),
                                "launch.nproc_per_node=" + std::to_string(cluster.gpusPerNode),
                                std::string("parallel.mode=") + (replicated ? "ddp" : "fsdp")};
  if (!replicated) {
    a.push_back("parallel.sharding_strategy=" + strategy);
    a.push_back("parallel.wrap_policy=" + policy);
  }
  a.push_back(std::string("parallel.cpu_offload=") + (cpuOffload ? "true" : "false"));
  a.push_back(std::string("model.gradient_checkpointing=") + (checkpointing ? "true" : "false"));
  a.push_back("optim.precision=" + precision);
  a.push_back("optim.grad_accum_steps=" + std::to_string(accumulation));
  for (size_t i = 0; i < microBatch.size() && i < config.data.datasets.size(); ++i)
    a.push_back("data.datasets." + std::to_string(i) + ".batch_size=" + std::to_string(microBatch[i]));
  return a;
}

std::string FitChoice::label() const {
  std::string mb;
  for (const auto b : microBatch) mb += (mb.empty() ? "" : "+") + std::to_string(b);
  return strategy + (policy.empty() ? "" : "/" + policy) + " mb " + mb + "x" + std::to_string(accumulation) +
         (checkpointing ? " ckpt" : "") + " " + precision + (cpuOffload ? " offload" : "");
}

protocol::StatusOr<FitResult> fitToCluster(const FitRequest& req) {
  if (auto s = checkCluster(req.cluster); !s) return s;
  if (!(req.headroom >= 0 && req.headroom < 1))
    return protocol::Status::invalidArgument("--headroom: " + plainNumber(req.headroom) +
                                             " must be at least 0 and below 1 (a share of the peak)");
  const Cluster& cluster = req.cluster;
  const protocol::RunConfig& base = req.config;
  const int64_t world = cluster.world();
  if (base.data.datasets.empty())
    return protocol::Status::invalidArgument(
        "data.datasets: empty; the fit keeps each dataset's global batch");

  // Per-rank samples per step, the global batch kept (NOTE [Fit search]).
  const int64_t asked_world = std::max<int64_t>(1, base.worldSize());
  const int64_t asked_accum = std::max<int64_t>(1, base.optim.grad_accum_steps);
  std::vector<int64_t> per_rank;
  int64_t common = 0;
  for (size_t i = 0; i < base.data.datasets.size(); ++i) {
    const auto& d = base.data.datasets[i];
    const int64_t global = d.batch_size * asked_accum * asked_world;
    if (global % world != 0)
      return protocol::Status::invalidArgument(
          "data.datasets." + d.name + ".batch_size: the global batch " + std::to_string(global) + " (" +
          std::to_string(d.batch_size) + " x grad_accum_steps " + std::to_string(asked_accum) + " x " +
          std::to_string(asked_world) + " ranks) does not divide over the cluster's " +
          std::to_string(world) + " ranks");
    per_rank.push_back(global / world);
    common = std::gcd(common, global / world);
  }

  std::vector<std::string> strategies = req.strategies;
  if (strategies.empty()) {
    if (world == 1) {
      strategies = {"full_shard", "single"};
    } else {
      strategies = {"full_shard", "shard_grad_op", "no_shard", "ddp"};
      if (cluster.nodes > 1) strategies.insert(strategies.begin() + 2, "hybrid_shard");
    }
  }
  std::vector<Strategy> fsdp, replicated;
  for (const auto& name : strategies) {
    auto s = strategyFromName(name, "--strategies");
    if (!s) return s.status();
    if (*s == Strategy::kSingle && world > 1)
      return protocol::Status::invalidArgument("--strategies: single is one process, but the cluster has " +
                                               std::to_string(world) + " ranks");
    if (*s == Strategy::kDdp && world == 1)
      return protocol::Status::invalidArgument("--strategies: ddp needs several ranks; the cluster has 1");
    (isReplicated(*s) ? replicated : fsdp).push_back(*s);
  }
  std::vector<std::string> precisions = req.precisions;
  if (precisions.empty()) {
    precisions = {base.optim.precision, "fp32", "amp_bf16", "bf16"};
    std::vector<std::string> unique;
    for (const auto& p : precisions)
      if (std::find(unique.begin(), unique.end(), p) == unique.end()) unique.push_back(p);
    precisions = unique;
  }
  for (const auto& p : precisions) {
    protocol::RunConfig probe = base;
    probe.optim.precision = p;
    if (auto s = oursPrecision(probe); !s)
      return protocol::Status::invalidArgument("--precisions: " + s.status().message());
  }

  FitResult result;
  result.cluster = cluster;
  std::vector<FitChoice> all;
  const Topology topology{world, cluster.nodes};
  for (const int64_t accum : divisors(common)) {
    FitChoice shape;
    shape.accumulation = accum;
    for (const auto r : per_rank) shape.microBatch.push_back(r / accum);
    for (const auto& precision : precisions) {
      for (const bool ckpt : {false, true}) {
        for (const bool offload : {false, true}) {
          if (offload && req.device == PlanDevice::kCpu) continue;  // the device is the host
          for (const bool replicatedPass : {false, true}) {
            const auto& group = replicatedPass ? replicated : fsdp;
            if (group.empty() || (replicatedPass && offload)) continue;
            FitChoice c = shape;
            c.precision = precision;
            c.checkpointing = ckpt;
            c.cpuOffload = offload;
            c.strategy = strategyName(group.front());
            c.policy = replicatedPass ? "" : base.parallel.wrap_policy;
            PlanRequest pr;
            pr.config = configFor(base, c, cluster);
            pr.topology = topology;
            pr.strategies = group;
            pr.policies = replicatedPass ? std::vector<std::string>{"openflamingo"} : req.policies;
            pr.reference = false;
            pr.device = req.device;
            if (replicatedPass) {
              auto prec = oursPrecision(pr.config);
              if (prec && prec->weight != Dtype::kFloat32) continue;  // validation refuses half weights
            }
            auto plan = makePlan(pr);
            if (!plan) return plan.status();
            for (const auto& e : plan->entries) {
              FitChoice x = c;
              x.strategy = strategyName(e.strategy);
              x.policy = replicatedPass ? "" : e.policy;
              const protocol::RunConfig cfg = configFor(base, x, cluster);
              const PrecisionPlan prec =
                  isReplicated(e.strategy) ? replicatedPrecisionOf(plan->precision) : plan->precision;
              x.time = estimateStepTime(*plan, e, prec, cfg, cluster);
              x.deviceBytes = deviceBytesOf(e, req.device, offload);
              x.hostBytes = offload ? e.memory.modelState() * cluster.gpusPerNode : 0;
              const int64_t need = withHeadroom(x.deviceBytes, req.headroom);
              x.margin = cluster.memoryPerGpu - need;
              if (need > cluster.memoryPerGpu)
                x.exceeds.push_back("memory per GPU: needs " + formatBytes(x.deviceBytes) +
                                    headroomText(req.headroom) + " > " + formatBytes(cluster.memoryPerGpu) +
                                    " (over by " + formatBytes(need - cluster.memoryPerGpu) + ")");
              if (withHeadroom(x.hostBytes, req.headroom) > cluster.hostMemoryPerNode)
                x.exceeds.push_back("host memory per node: " + std::to_string(cluster.gpusPerNode) +
                                    " ranks' offloaded model state " + formatBytes(x.hostBytes) + " > " +
                                    formatBytes(cluster.hostMemoryPerNode));
              all.push_back(std::move(x));
            }
          }
        }
      }
    }
  }
  for (auto& c : all) (c.exceeds.empty() ? result.ranked : result.misfits).push_back(std::move(c));
  std::stable_sort(result.ranked.begin(), result.ranked.end(), [](const FitChoice& a, const FitChoice& b) {
    if (a.time.totalS() != b.time.totalS()) return a.time.totalS() < b.time.totalS();
    return a.margin > b.margin;
  });
  std::stable_sort(result.misfits.begin(), result.misfits.end(),
                   [](const FitChoice& a, const FitChoice& b) { return a.margin > b.margin; });
  for (size_t i = 0; i < result.ranked.size(); ++i) {
    auto& c = result.ranked[i];
    if (i == 0) {
      c.reason = "#1: fastest that fits: " + seconds(c.time.totalS()) + " a step (compute " +
                 seconds(c.time.computeS) + ", recompute " + seconds(c.time.recomputeS) +
                 ", exposed communication " + seconds(c.time.exposedCommS) + ", host copies " +
                 seconds(c.time.offloadS) + "); margin " + formatBytes(c.margin);
    } else {
      c.reason = reasonAfter(c, result.ranked.front(), i + 1);
    }
  }
  for (auto& c : result.misfits) {
    c.reason = "does not fit: ";
    for (size_t i = 0; i < c.exceeds.size(); ++i) c.reason += (i ? "; " : "") + c.exceeds[i];
  }
  if (req.device == PlanDevice::kCpu)
    result.notes.push_back(
        "CPU mode: device bytes are the planned peak, without the CUDA allocator's rounding; the device is "
        "the host, so cpu_offload is not tried");
  return result;
}

std::string noFitMessage(const FitResult& result) {
  std::string m =
      "nothing fits: no choice stays within " + formatBytes(result.cluster.memoryPerGpu) + " per GPU";
  if (!result.misfits.empty())
    m += "; the least needs " + formatBytes(result.misfits.front().deviceBytes) + " (" +
         result.misfits.front().label() + ": " + result.misfits.front().reason + ")";
  return m + "; add GPUs or nodes, or use GPUs with more memory";
}

}  // namespace fs::fsdp_plan
