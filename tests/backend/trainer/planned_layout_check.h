// The FSDP layout a run reports (its layout and memory events) against the
// planner's (backend/fsdp_plan) for the same config: the engine and the
// planner must agree to the byte. Shared by the loopback FSDP tests and the
// two-node integration test.
#pragma once

#include <gtest/gtest.h>

#include "backend/fsdp_plan/layout.h"
#include "backend/fsdp_plan/memory_estimate.h"
#include "backend/fsdp_plan/sharding.h"
#include "tests/backend/trainer/rank_runs.h"

namespace fs::trainer::test {

// The run's layout event, or null when it wrote none.
inline const protocol::LayoutEvent* layoutOf(const RunOutput& r) {
  for (const auto& e : r.events) {
    if (const auto* l = std::get_if<protocol::LayoutEvent>(&e.body)) return l;
  }
  return nullptr;
}

// The layout event against the planner's layout and shard plan for the same
// config (`world` ranks on `nodes` nodes): units, parameter counts, padding and
// shard bytes on every rank; and each memory event's parameters, gradients and
// optimizer state per rank equal the planner's estimate to the byte.
inline void expectPlannedLayout(const RunOutput& r, const protocol::RunConfig& cfg,
                                fsdp_plan::Strategy strategy, int world, int nodes) {
  const auto* layout = layoutOf(r);
  ASSERT_NE(layout, nullptr);
  auto inventory = fsdp_plan::buildParamInventory(cfg.model);
  ASSERT_TRUE(inventory.isOk());
  const auto precision = *fsdp_plan::oursPrecision(cfg);
  auto planned =
      fsdp_plan::buildLayout(*inventory, *fsdp_plan::wrapPolicyFromConfig(cfg.parallel), precision);
  ASSERT_TRUE(planned.isOk()) << planned.status().message();
  const auto shards = fsdp_plan::planShards(*planned, precision, strategy, {world, nodes});
  std::vector<size_t> nonEmpty;
  for (size_t i = 0; i < planned->units.size(); ++i) {
    if (planned->units[i].paramCount > 0) nonEmpty.push_back(i);
  }
  ASSERT_EQ(layout->units.size(), nonEmpty.size());
  for (size_t k = 0; k < nonEmpty.size(); ++k) {
    const auto& want = planned->units[nonEmpty[k]];
    const auto& got = layout->units[k];
    EXPECT_EQ(got.path, want.path);
    EXPECT_EQ(got.param_count, want.paramCount) << want.path;
    EXPECT_EQ(got.frozen_params, want.frozenCount) << want.path;
    EXPECT_EQ(got.padding_elems, shards.units[nonEmpty[k]].padding()) << want.path;
    ASSERT_EQ(got.shard_bytes.size(), static_cast<size_t>(world)) << want.path;
    for (int64_t b : got.shard_bytes) EXPECT_EQ(b, shards.units[nonEmpty[k]].shardBytes()) << want.path;
  }
  // Model state per rank, as each memory event reports it, is the planner's to the byte.
  const auto estimate = fsdp_plan::estimateRankMemory(*planned, shards, precision, cfg,
                                                      fsdp_plan::estimateActivations(cfg, precision.compute));
  int reports = 0;
  for (const auto& e : r.events) {
    const auto* m = std::get_if<protocol::MemoryEvent>(&e.body);
    if (!m) continue;
    ASSERT_EQ(m->ranks.size(), static_cast<size_t>(world));
    for (const auto& rank : m->ranks) {
      EXPECT_EQ(rank.params, estimate.parameters) << "rank " << rank.rank << " step " << m->step;
      EXPECT_EQ(rank.grads, estimate.gradients) << "rank " << rank.rank << " step " << m->step;
      EXPECT_EQ(rank.optimizer, estimate.optimizer) << "rank " << rank.rank << " step " << m->step;
      ++reports;
    }
  }
  EXPECT_GT(reports, 0) << "no memory event";
}

}  // namespace fs::trainer::test
