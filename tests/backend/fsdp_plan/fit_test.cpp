// The fit to a cluster (fit.h, cluster.h, step_time.h): the catalog, bad
// cluster input naming the field and value, the search space, the global
// batch kept, ranking by the step-time model, misfits with what they exceed.
#include "backend/fsdp_plan/fit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "backend/fsdp_plan/fit_report.h"
#include "backend/fsdp_plan/plan_report.h"
#include "tests/backend/fsdp_plan/plan_test_util.h"

namespace fs::fsdp_plan {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

Cluster h100(int64_t nodes = 1) {
  auto gpu = gpuByName("H100-SXM-80GB", "--gpu");
  EXPECT_TRUE(gpu.isOk());
  Cluster c = clusterFromGpu(*gpu);
  c.nodes = nodes;
  return c;
}

TEST(ClusterTest, CatalogEntriesAreCompleteAndSourced) {
  ASSERT_GE(gpuCatalog().size(), 5u);
  for (const auto& g : gpuCatalog()) {
    SCOPED_TRACE(g.name);
    EXPECT_GT(g.memoryBytes, 0);
    EXPECT_GT(g.peakTflops16, g.peakTflopsFp32);
    EXPECT_GT(g.intraNodeGBs, 0);
    EXPECT_FALSE(g.source.empty());
    EXPECT_TRUE(checkCluster(clusterFromGpu(g)).isOk());
  }
  EXPECT_TRUE(gpuByName("h100-sxm-80gb", "--gpu").isOk());  // case-insensitive
}

TEST(ClusterTest, BadInputNamesFieldAndValue) {
  auto unknown = gpuByName("B300", "--gpu");
  ASSERT_FALSE(unknown.isOk());
  EXPECT_NE(unknown.status().message().find("--gpu: unknown GPU 'B300'"), std::string::npos);
  EXPECT_NE(unknown.status().message().find("H100-SXM-80GB"), std::string::npos);

  struct Bad {
    std::string field, value, expect;
  };
  for (const auto& b : std::vector<Bad>{{"nodes", "0", "nodes: 0 must be at least 1"},
                                        {"gpus_per_node", "-2", "gpus_per_node: -2"},
                                        {"memory_gib", "0", "memory_gib: 0"},
                                        {"intra_node_gbs", "-5", "intra_node_gbs: -5 must be above 0"},
                                        {"inter_node_gbs", "-1", "inter_node_gbs: -1"},
                                        {"peak_tflops_16", "0", "peak_tflops_16: 0"},
                                        {"efficiency", "1.5", "efficiency: 1.5"}}) {
    SCOPED_TRACE(b.field);
    Cluster c = h100();
    ASSERT_TRUE(setClusterField(&c, b.field, b.value).isOk());
    const auto s = checkCluster(c);
    ASSERT_FALSE(s.isOk());
    EXPECT_NE(s.message().find(b.expect), std::string::npos) << s.message();
  }
  Cluster c = h100();
  const auto nan = setClusterField(&c, "nodes", "two");
  EXPECT_NE(nan.message().find("nodes: 'two' is not a number"), std::string::npos) << nan.message();
  const auto half = setClusterField(&c, "nodes", "1.5");
  EXPECT_NE(half.message().find("nodes: '1.5' is not a whole number"), std::string::npos);
  const auto field = setClusterField(&c, "bogus", "1");
  EXPECT_NE(field.message().find("unknown cluster field 'bogus'"), std::string::npos);

  // A bad cluster reaches the fit's error too.
  FitRequest req;
  req.config = test::preset("tiny");
  req.cluster = h100();
  req.cluster.nodes = 0;
  auto fit = fitToCluster(req);
  ASSERT_FALSE(fit.isOk());
  EXPECT_NE(fit.status().message().find("nodes: 0"), std::string::npos);
}

TEST(FitTest, SearchesTheSpaceAndKeepsTheGlobalBatch) {
  FitRequest req;
  req.config = test::preset(
      "tiny", {"data.datasets.0.batch_size=4", "data.datasets.1.batch_size=4", "optim.grad_accum_steps=1"});
  req.cluster = h100();
  req.cluster.gpusPerNode = 2;
  auto fit = fitToCluster(req);
  ASSERT_TRUE(fit.isOk()) << fit.status().message();
  ASSERT_FALSE(fit->ranked.empty());
  std::set<std::string> strategies, policies, precisions;
  std::set<int64_t> accums;
  std::set<bool> ckpt, offload;
  const auto& asked = req.config;
  for (const auto& c : fit->ranked) {
    strategies.insert(c.strategy);
    policies.insert(c.policy);
    precisions.insert(c.precision);
    accums.insert(c.accumulation);
    ckpt.insert(c.checkpointing);
    offload.insert(c.cpuOffload);
    // The global batch as asked: micro-batch x accumulation x the cluster's ranks.
    for (size_t i = 0; i < c.microBatch.size(); ++i)
      EXPECT_EQ(c.microBatch[i] * c.accumulation * 2,
                asked.data.datasets[i].batch_size * asked.optim.grad_accum_steps * asked.worldSize());
    if (c.strategy == "ddp") {
      EXPECT_FALSE(c.cpuOffload);
      EXPECT_EQ(c.policy, "");
      EXPECT_NE(c.precision, "bf16");
    }
  }
  EXPECT_EQ(strategies, (std::set<std::string>{"full_shard", "shard_grad_op", "no_shard", "ddp"}));
  EXPECT_TRUE(policies.count("transformer_layer") && policies.count("openflamingo"));
  EXPECT_TRUE(precisions.count("fp32") && precisions.count("amp_bf16") && precisions.count("bf16"));
  EXPECT_GE(accums.size(), 2u);
  EXPECT_EQ(ckpt.size(), 2u);
  EXPECT_EQ(offload.size(), 2u);
  EXPECT_TRUE(fit->misfits.empty());  // tiny fits an H100 every way
  // Ranked by the model's step time, each with a reason.
  for (size_t i = 1; i < fit->ranked.size(); ++i)
    EXPECT_LE(fit->ranked[i - 1].time.totalS(), fit->ranked[i].time.totalS());
  EXPECT_NE(fit->ranked[0].reason.find("#1: fastest that fits"), std::string::npos);
  EXPECT_NE(fit->ranked[1].reason.find("#2:"), std::string::npos);
  // Hybrid sharding only on several nodes.
  EXPECT_EQ(strategies.count("hybrid_shard"), 0u);
  req.cluster.nodes = 2;
  auto two = fitToCluster(req);
  ASSERT_TRUE(two.isOk()) << two.status().message();
  bool hybrid = false;
  for (const auto& c : two->ranked) hybrid = hybrid || c.strategy == "hybrid_shard";
  EXPECT_TRUE(hybrid);
}

TEST(FitTest, GlobalBatchThatDoesNotDivideNamesTheDataset) {
  FitRequest req;
  req.config = test::preset("tiny", {"data.datasets.0.batch_size=3", "optim.grad_accum_steps=1"});
  req.cluster = h100();
  req.cluster.gpusPerNode = 2;
  auto fit = fitToCluster(req);
  ASSERT_FALSE(fit.isOk());
  EXPECT_NE(fit.status().message().find("data.datasets." + req.config.data.datasets[0].name + ".batch_size"),
            std::string::npos)
      << fit.status().message();
  EXPECT_NE(fit.status().message().find("does not divide over the cluster's 2 ranks"), std::string::npos);
}

TEST(FitTest, StepTimeModelTerms) {
  FitRequest req;
  req.config = test::preset("small", {"optim.grad_accum_steps=1"});
  req.cluster = h100();
  req.cluster.gpusPerNode = 4;
  req.precisions = {"amp_bf16"};
  req.policies = {"transformer_layer"};
  auto fit = fitToCluster(req);
  ASSERT_TRUE(fit.isOk()) << fit.status().message();
  auto find = [&](const std::string& strategy, bool ckpt, bool offload, int64_t accum) -> const FitChoice* {
    for (const auto& c : fit->ranked)
      if (c.strategy == strategy && c.checkpointing == ckpt && c.cpuOffload == offload &&
          c.accumulation == accum)
        return &c;
    return nullptr;
  };
  const FitChoice* full = find("full_shard", false, false, 1);
  const FitChoice* grad_op = find("shard_grad_op", false, false, 1);
  const FitChoice* ckpt = find("full_shard", true, false, 1);
  const FitChoice* offload = find("full_shard", false, true, 1);
  ASSERT_TRUE(full && grad_op && ckpt && offload);
  // Checkpointing recomputes, and only that: same compute, same communication.
  EXPECT_EQ(full->time.recomputeS, 0);
  EXPECT_GT(ckpt->time.recomputeS, 0);
  EXPECT_LT(ckpt->time.recomputeS, ckpt->time.computeS);
  EXPECT_DOUBLE_EQ(ckpt->time.computeS, full->time.computeS);
  EXPECT_EQ(ckpt->time.commBytes, full->time.commBytes);
  // shard_grad_op gathers once a micro-batch, full_shard twice.
  EXPECT_LT(grad_op->time.commBytes, full->time.commBytes);
  // Offload adds host copies and keeps the model state off the device.
  EXPECT_GT(offload->time.offloadS, 0);
  EXPECT_LT(offload->deviceBytes, full->deviceBytes);
  EXPECT_GT(offload->hostBytes, 0);
  // fp32 compute runs at the FP32 peak, 16-bit at the tensor-core peak.
  req.precisions = {"fp32"};
  auto fp32 = fitToCluster(req);
  ASSERT_TRUE(fp32.isOk());
  int compared = 0;
  for (const auto& c : fp32->ranked) {
    if (c.strategy == "full_shard" && !c.checkpointing && !c.cpuOffload && c.accumulation == 1) {
      EXPECT_NEAR(c.time.computeS / full->time.computeS, 989.4 / 67, 1e-6);
      ++compared;
    }
  }
  EXPECT_GT(compared, 0) << "no fp32 full_shard choice without checkpointing, offload or accumulation";
}

TEST(FitTest, MisfitsSayWhatTheyExceedAndNothingFitsRefuses) {
  FitRequest req;
  req.config = test::preset("small", {"optim.grad_accum_steps=1"});
  req.cluster = h100();
  req.cluster.gpusPerNode = 2;
  req.device = PlanDevice::kCpu;
  req.headroom = 0;
  auto roomy = fitToCluster(req);
  ASSERT_TRUE(roomy.isOk());
  std::vector<int64_t> need;
  for (const auto& c : roomy->ranked) need.push_back(c.deviceBytes);
  std::sort(need.begin(), need.end());
  // A budget between the two smallest needs: only the smallest fits.
  req.cluster.memoryPerGpu = need[0];
  auto tight = fitToCluster(req);
  ASSERT_TRUE(tight.isOk());
  ASSERT_FALSE(tight->ranked.empty());
  for (const auto& c : tight->ranked) EXPECT_LE(c.deviceBytes, need[0]);
  ASSERT_FALSE(tight->misfits.empty());
  const auto& worst = tight->misfits.front();
  EXPECT_NE(worst.reason.find("memory per GPU: needs"), std::string::npos) << worst.reason;
  EXPECT_GT(worst.deviceBytes, need[0]);
  // Below the smallest: nothing fits, and the message says by how much.
  req.cluster.memoryPerGpu = need[0] - 1;
  auto none = fitToCluster(req);
  ASSERT_TRUE(none.isOk());
  EXPECT_TRUE(none->ranked.empty());
  const std::string message = noFitMessage(*none);
  EXPECT_NE(message.find("nothing fits"), std::string::npos);
  EXPECT_NE(message.find(formatBytes(need[0])), std::string::npos) << message;
  // Headroom: the same budget refuses once 5 % is kept free.
  req.cluster.memoryPerGpu = need[0];
  req.headroom = 0.05;
  auto kept = fitToCluster(req);
  ASSERT_TRUE(kept.isOk());
  for (const auto& c : kept->ranked) EXPECT_LE(c.deviceBytes * 105 / 100, need[0]);
  EXPECT_NE(kept->misfits.front().reason.find("+ 5 % headroom"), std::string::npos)
      << kept->misfits.front().reason;
  req.headroom = 1.5;
  auto bad = fitToCluster(req);
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("--headroom: 1.5"), std::string::npos) << bad.status().message();
  req.headroom = 0.05;
  // In CPU mode the device is the host: no cpu_offload.
  for (const auto& c : roomy->ranked) EXPECT_FALSE(c.cpuOffload);
  // Host memory: offloaded model state beyond the node's host memory.
  req.cluster.memoryPerGpu = 80 * kGiB;
  req.cluster.hostMemoryPerNode = 1;
  req.device = PlanDevice::kCuda;
  auto host = fitToCluster(req);
  ASSERT_TRUE(host.isOk());
  bool saw = false;
  for (const auto& c : host->misfits) {
    EXPECT_TRUE(c.cpuOffload);
    saw = saw || c.reason.find("host memory per node") != std::string::npos;
  }
  EXPECT_TRUE(saw);
}

TEST(FitTest, AssignmentsMakeTheChoice) {
  FitRequest req;
  req.config = test::preset("tiny");
  req.cluster = h100();
  req.cluster.gpusPerNode = 2;
  auto fit = fitToCluster(req);
  ASSERT_TRUE(fit.isOk());
  const FitChoice& best = fit->ranked.front();
  protocol::RunConfig applied = req.config;
  const auto problems = protocol::applyOverrides(&applied, best.assignments(req.config, req.cluster));
  ASSERT_TRUE(problems.empty()) << protocol::formatProblems(problems);
  EXPECT_EQ(applied.launch.nproc_per_node, 2);
  EXPECT_EQ(applied.optim.precision, best.precision);
  EXPECT_EQ(applied.optim.grad_accum_steps, best.accumulation);
  EXPECT_EQ(applied.model.gradient_checkpointing, best.checkpointing);
  EXPECT_EQ(applied.data.datasets[0].batch_size, best.microBatch[0]);
  const auto json = fitToJson(*fit, req.config);
  EXPECT_EQ(json["schema"], kFitJsonSchema);
  EXPECT_EQ(json["ranked"].size(), fit->ranked.size());
  EXPECT_EQ(json["ranked"][0]["reason"], best.reason);
  const std::string text = formatFit(*fit, 3);
  EXPECT_NE(text.find("Fits ("), std::string::npos);
  EXPECT_NE(text.find(best.label()), std::string::npos);
}

}  // namespace
}  // namespace fs::fsdp_plan
