// Where a step's peak of CPU tensor memory is: the storages live at the
// moment the step's total reached its highest value, grouped by memory phase
// and by the LibTorch operators that allocated them. A diagnostic for the
// planner's memory model (docs/planner.md, "Finding a missing term"); slow
// (a log entry per allocation and a mutex), so only fsdp_peak_probe
// --live-at-peak uses it.
//
// NOTE [Live at peak]: install() wraps the current CPU allocator (after the
// trainer installed the memory tracker, so the tracker's counts are
// unchanged) and registers a RecordFunction callback that keeps each
// thread's operator stack. Every allocation and free is logged with its size
// and a label "phase: outer op > inner op"; endStep() replays the log to the
// moment the running total was highest and returns the live storages there,
// grouped by label. Storages allocated before install() are unknown to the
// wrapper (their frees bypass it): the figures cover only what was allocated
// after install(), i.e. not the model's parameter shards.
//
// Thread-safety: any thread allocates; endStep() from the training thread.
#pragma once

#include <cstdint>
#include <string>

namespace fs::bench {

// REQUIRES: the memory tracker installed (the trainer's set-up did it).
void installLiveAtPeak();
// Live bytes by label at this step's highest point, largest first, one "bytes count label" per line,
// with the total first; starts the next step's log.
std::string endLiveAtPeakStep();

}  // namespace fs::bench
