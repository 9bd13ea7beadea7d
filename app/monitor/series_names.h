// The names of the series a run's events fill in the SeriesStore.
//
// NOTE [Series names]
// A series name is a '/'-separated path; <ds> is a dataset name as listed in
// run_started.datasets (e.g. "laion", "mmc4"), <r> a global rank, <n> a gated
// cross-attention layer index. One point per event that carries the value:
//
//   loss/<ds>                 step.loss: training loss, mean over ranks
//   loss/<ds>/rank<r>         step.rank_loss: the same on rank r alone
//   val_loss/<ds>             validation.loss
//   lr                        step.lr
//   grad_norm                 step.grad_norm (no point when the step has none)
//   samples_per_s/<ds>        step.samples_per_s
//   step_time_s               step.step_time_s
//   data_time_s               step.data_time_s
//   comm_time_s               step.comm_time_s (time waiting on other ranks)
//   gate/attn/<n>             step.gates[layer n].attn (tanh of the gate)
//   gate/ff/<n>               step.gates[layer n].ff
//   memory/rank<r>/<what>     memory.ranks[rank r], bytes; <what> is one of
//                             rss, peak, params, grads, optimizer, gathered,
//                             activations, device, device_peak (the last two
//                             only when the event carries them), or
//                             gathered_units: a count of units, not bytes
//                             (FSDP only: the event's gathered_units), or
//                             step_peak (when the event carries it: the
//                             highest live tensor bytes of its step), or
//                             device_reserved, device_reserved_peak (the
//                             device allocator's reserved bytes; only when
//                             the event carries them)
//
// Values are as the event carries them (NaN included: a plot draws a gap). The
// functions below build the names so no caller spells them by hand.
//
// Thread-safety: stateless functions.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace fs::app::series {

inline std::string loss(std::string_view dataset) {
  return "loss/" + std::string(dataset);
}
inline std::string rankLoss(std::string_view dataset, int rank) {
  return "loss/" + std::string(dataset) + "/rank" + std::to_string(rank);
}
inline std::string validationLoss(std::string_view dataset) {
  return "val_loss/" + std::string(dataset);
}
inline std::string samplesPerSecond(std::string_view dataset) {
  return "samples_per_s/" + std::string(dataset);
}
inline constexpr std::string_view kLr = "lr";
inline constexpr std::string_view kGradNorm = "grad_norm";
inline constexpr std::string_view kStepTime = "step_time_s";
inline constexpr std::string_view kDataTime = "data_time_s";
inline constexpr std::string_view kCommTime = "comm_time_s";
inline std::string gateAttn(int layer) {
  return "gate/attn/" + std::to_string(layer);
}
inline std::string gateFf(int layer) {
  return "gate/ff/" + std::to_string(layer);
}

// The memory categories of NOTE [Series names], in the order a breakdown stacks them.
inline constexpr std::array<std::string_view, 13> kMemoryCategories = {"rss",
                                                                       "peak",
                                                                       "params",
                                                                       "grads",
                                                                       "optimizer",
                                                                       "gathered",
                                                                       "activations",
                                                                       "device",
                                                                       "device_peak",
                                                                       "gathered_units",
                                                                       "step_peak",
                                                                       "device_reserved",
                                                                       "device_reserved_peak"};
inline std::string memory(int rank, std::string_view category) {
  return "memory/rank" + std::to_string(rank) + "/" + std::string(category);
}

}  // namespace fs::app::series
