// Sample telemetry bodies for the codec tests: one per event type with every field,
// optional ones included, set to a non-default value (so a field missing from a
// field list fails the round trip), plus the minimal form of each type.
#pragma once

#include <limits>
#include <vector>

#include "backend/protocol/wire/events.h"

namespace fs::protocol::testing {

inline std::vector<EventBody> fullSampleBodies() {
  std::vector<EventBody> out;
  out.push_back(RunStartedEvent{"run-20240601-abc",
                                "0.1.0+g1234",
                                8,
                                2,
                                {"node-a", "node-b"},
                                "sha256:0f3c",
                                12000,
                                3000,
                                {"laion", "mmc4"}});
  LayoutEvent layout;
  layout.units.push_back(
      {"vision_encoder", 303000000, "bfloat16", false, 303000000, {75750000, 75750000}, 0, 0});
  layout.units.push_back(
      {"lang_encoder.gated_cross_attn_layers.3", 50331648, "float32", true, 0, {100663296, 100663296}, 7, 4});
  layout.max_units_gathered = 2;
  out.push_back(layout);
  StepEvent step;
  step.step = 1250;
  step.epoch = 1;
  step.samples = {{"laion", 2560000}, {"mmc4", 1280000}};
  step.tokens = {{"laion", 81920000}, {"mmc4", 327680000}};
  step.loss = {{"laion", 2.8125}, {"mmc4", 2.25}};
  step.rank_loss = {{"laion", {2.75, 2.875}}, {"mmc4", {2.0, 2.5}}};
  step.lr = 1e-4;
  step.grad_norm = 0.8125;
  step.step_time_s = 1.375;
  step.data_time_s = 0.0625;
  step.samples_per_s = {{"laion", 1861.8}, {"mmc4", 930.9}};
  step.gates = {{0, 0.015625, -0.03125}, {4, 0.125, 0.25}};
  step.skipped = true;
  step.skip_reason = "non-finite gradients";
  step.loss_scale = 32768.0;
  out.push_back(step);
  out.push_back(ValidationEvent{1250, {{"laion", 2.9}, {"mmc4", 2.4}}, 12.5});
  MemoryEvent mem;
  mem.step = 1250;
  mem.ranks.push_back(
      {0, 9000000000, 9500000000, 1000, 2000, 4000, 8000, 16000, 30000000000, 35000000000, 3, {1, 2, 4}});
  mem.ranks.back().step_peak = 31000;
  mem.ranks.back().device = "cuda:0";
  mem.ranks.back().device_reserved = 31457280000;
  mem.ranks.back().device_reserved_peak = 37748736000;
  mem.ranks.back().device_phases = {{"activations", {34000000000, 37748736000}}, {"gradients", {1, 2}}};
  mem.ranks.push_back({1, 8000000000, 8500000000, 1001, 2001, 4001, 8001, 16001, std::nullopt, std::nullopt});
  out.push_back(mem);
  out.push_back(CheckpointEvent{3000, 1, "checkpoint_1.pt", 4294967296, CheckpointKind::kFinal, 42.5});
  out.push_back(WarningEvent{"telemetry_dropped", "dropped 3 events: queue full", 3});
  out.push_back(
      DataStatsEvent{1250, {{"mmc4", {{"no_images", 12}, {"too_long", 3}}}, {"laion", {{"decode", 1}}}}});
  out.push_back(ControlAckEvent{7, "pause", true, "paused after step 1250", 1250});
  out.push_back(HeartbeatEvent{
      1251, RunState::kPaused, {{0, "all_gather lang_encoder.layers.3", 98765}, {1, "barrier", 98764}}});
  out.push_back(StateEvent{RunState::kStopping, "control 8 stop"});
  out.push_back(RunFinishedEvent{FinishStatus::kStopped, 3000, {{"laion", 2.5}, {"mmc4", 2.0}}, 3600.25});
  out.push_back(ErrorEvent{"CUDA out of memory", 5, "forward"});
  out.push_back(RollbackEvent{1300,
                              1200,
                              "checkpoint_step1200.pt",
                              "laion",
                              "mad",
                              "laion loss 9.5 is 14.25 MADs above the window's median 2.5 (limit 6)",
                              {2.5, 2.625, 2.375, 9.5},
                              104,
                              0.5,
                              50,
                              1,
                              3});
  return out;
}

inline std::vector<EventBody> minimalSampleBodies() {
  std::vector<EventBody> out;
  out.push_back(RunStartedEvent{});
  out.push_back(LayoutEvent{});
  out.push_back(StepEvent{});
  out.push_back(ValidationEvent{});
  out.push_back(MemoryEvent{});
  out.push_back(CheckpointEvent{});
  out.push_back(WarningEvent{});
  out.push_back(DataStatsEvent{});
  out.push_back(ControlAckEvent{});
  out.push_back(HeartbeatEvent{});
  out.push_back(StateEvent{});
  out.push_back(RunFinishedEvent{});
  out.push_back(ErrorEvent{});
  out.push_back(RollbackEvent{});
  return out;
}

}  // namespace fs::protocol::testing
