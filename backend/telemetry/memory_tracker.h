// Exact CPU tensor memory by phase, plus the process's resident set.
//
// installCpuMemoryTracker() puts a counting wrapper in front of LibTorch's CPU
// allocator (c10::SetCPUAllocator). Every CPU storage allocated afterwards is counted
// under the *phase* tagged on the allocating thread when it is allocated (MemoryPhase,
// an RAII scope the trainer opens around parameter creation, backward, the optimizer
// step, ...), and the same phase is decremented when that storage is freed, whichever
// thread frees it and whatever phase is current then.
//
// NOTE [What the memory counters guarantee]
//  - live(phase) is exactly the sum of the byte sizes requested from the CPU allocator
//    by storages allocated under `phase` after installation and not yet freed. For a
//    fresh tensor that is storage().nbytes() = numel * element size; a view adds
//    nothing; resizing a storage counts the new request. Allocator overhead (alignment,
//    malloc metadata, the wrapper's 64-byte header per allocation) is not included.
//  - peak(phase) is exactly the highest value live(phase) reached since the last
//    resetMemoryPeaks() (or installation); total.peak likewise for the sum of phases.
//    (A reset racing with allocations on other threads may miss a peak reached during
//    the reset itself; call it between steps.)
//    The sum of the per-phase peaks may exceed total.peak: they peak at different times.
//  - stepPeak is exactly the highest value total.live reached since the last
//    resetStepPeak() (or installation), a second interval that resetMemoryPeaks()
//    leaves alone: the trainer resets it at every step's end for the memory event's
//    step_peak (NOTE [Step peak] in backend/trainer/rank_reporter.cpp) while the phase
//    peaks keep their own interval.
//  - atPeak[phase] is live(phase) at the moment total.peak was last raised (or reset):
//    where the peak's bytes were. The allocating thread copies the phases right after
//    raising the peak, so it is exact when one thread allocates at a time and off by
//    other threads' allocations in between otherwise; its sum is total.peak then.
//  - Not counted: storages that existed before installation (also not when freed),
//    zero-byte storages, memory LibTorch does not take from the CPU allocator
//    (from_blob, mmap'ed files, pinned memory, GPU memory, oneDNN scratch pads), and
//    every non-tensor allocation. RSS covers all of it, coarsely.
//  - Phases are per thread: tensors allocated by a data loader thread count as kOther
//    even while the training thread is in kActivations.
//  - allocationsMade counts every non-empty allocation the wrapper served since
//    installation, whatever its phase and whether it was freed since; frees never lower it
//    and trackExternalBytes() does not raise it. The difference of two snapshots is the
//    number of CPU storages allocated in between (tests/backend/trainer/step_budget_test
//    guards it per training step).
// The counters are relaxed atomics: an allocation costs a few atomic adds.
//
// Thread-safety: everything here may be used from any thread. Ownership: the wrapper
// lives for the rest of the process (storages it allocated may outlive any owner).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "backend/protocol/status.h"
#include "backend/protocol/wire/events.h"

namespace fs::telemetry {

enum class Phase : std::uint8_t { kParameters, kGradients, kOptimizer, kGathered, kActivations, kOther };
inline constexpr std::size_t kPhaseCount = 6;
std::string_view phaseName(Phase phase);  // "parameters", "gradients", ...

// Tags this thread's CPU allocations with `phase` until destroyed, then restores the
// previous tag (scopes nest). The tag of a thread that never opened one is kOther.
class MemoryPhase {
 public:
  explicit MemoryPhase(Phase phase);
  ~MemoryPhase();
  MemoryPhase(const MemoryPhase&) = delete;
  MemoryPhase& operator=(const MemoryPhase&) = delete;

 private:
  Phase previous_;
  Phase devicePrevious_;  // the device's phase when this scope opened (NOTE [Device memory by phase])
};
// This thread's current tag.
Phase currentMemoryPhase();

struct PhaseBytes {
  std::int64_t live = 0;  // bytes allocated and not yet freed
  std::int64_t peak = 0;  // highest `live` since the last resetMemoryPeaks()
};

struct ProcessMemory {
  std::int64_t rss_bytes = 0;       // VmRSS: resident now
  std::int64_t peak_rss_bytes = 0;  // VmHWM: highest resident set since the process started
};

// ---- device memory by phase (NOTE [Device memory by phase]) ----------------------------

// A device allocator's counters (runtime::DeviceMemory, which this library cannot name).
struct DeviceMemoryReading {
  std::int64_t allocated = 0;
  std::int64_t reserved = 0;
  std::int64_t peakAllocated = 0;  // since the reader's last resetPeak()
  std::int64_t peakReserved = 0;
};
// How the tracker reads one device. The trainer builds it from runtime/device_memory.h for a
// CUDA device; a test may pass its own functions.
struct DeviceMemoryReader {
  std::string device;                         // e.g. "cuda:0"
  std::function<DeviceMemoryReading()> read;  // REQUIRES: callable from any thread
  std::function<void()> resetPeak;            // the allocator's peaks become its current values
};
struct DevicePhasePeak {
  std::int64_t allocated = 0;  // the device's highest allocated bytes while the phase was current
  std::int64_t reserved = 0;   // and its highest reserved bytes
  bool seen = false;           // the phase was current at some moment of the interval
};
struct DeviceMemorySnapshot {
  std::string device;
  std::int64_t allocated = 0;  // now
  std::int64_t reserved = 0;
  std::int64_t peakAllocated = 0;  // since resetDevicePeaks()
  std::int64_t peakReserved = 0;
  std::array<DevicePhasePeak, kPhaseCount> phases{};  // since resetDevicePeaks()
};

struct MemorySnapshot {
  bool tracking = false;  // installCpuMemoryTracker() succeeded; else all counters are 0
  std::array<PhaseBytes, kPhaseCount> phases{};
  PhaseBytes total;                                // all phases together
  std::array<std::int64_t, kPhaseCount> atPeak{};  // each phase's live bytes when total.peak was reached
  std::int64_t stepPeak = 0;                       // highest total.live since resetStepPeak()
  std::int64_t allocations = 0;                    // live tracked allocations
  std::int64_t allocationsMade = 0;                // allocator calls counted since installation (never drops)
  ProcessMemory process;
  std::optional<DeviceMemorySnapshot> device;  // set while a device reader is (setDeviceMemoryReader)

  const PhaseBytes& operator[](Phase p) const { return phases[static_cast<std::size_t>(p)]; }
  // This rank's entry of a `memory` event: rss and peak RSS, and for params, grads,
  // optimizer, gathered and activations the *peak* of the phase since the last reset
  // (for parameters and optimizer state peak and live agree between steps; gradients,
  // gathered parameters and activations are gone by the time a step ends); with `device`, the
  // device fields (device, device_bytes, device_peak, device_reserved, device_reserved_peak,
  // device_phases).
  protocol::RankMemory toRankMemory(int rank) const;
};

// The priority given to c10::SetCPUAllocator (LibTorch registers its own at 0).
inline constexpr std::uint8_t kMemoryTrackerPriority = 100;

// Wraps the current CPU allocator (LibTorch's default unless something replaced it)
// and installs the wrapper. Idempotent. Unsupported when an allocator of higher
// priority keeps the wrapper out. Call it early: earlier storages are not counted.
protocol::Status installCpuMemoryTracker(std::uint8_t priority = kMemoryTrackerPriority);
bool cpuMemoryTrackerInstalled();

// Counts `bytes` under `phase` as if this thread allocated them now (negative: frees them): memory
// the rank owns that LibTorch does not take from the CPU allocator (its slice of the node-shared
// FSDP shards). No-op while the tracker is not installed.
void trackExternalBytes(Phase phase, std::int64_t bytes);

// The counters now, and the process's RSS (readProcessMemory()).
MemorySnapshot memorySnapshot();
// Starts a new peak interval: every peak becomes the current live value.
void resetMemoryPeaks();
// Starts a new step interval: stepPeak becomes the current total live value.
void resetStepPeak();
// VmRSS and VmHWM from /proc/self/status; zeros where that cannot be read.
ProcessMemory readProcessMemory();

// NOTE [Device memory by phase]
// With a reader set, every MemoryPhase boundary (a scope opening or closing, on any thread)
// ends an interval: the tracker reads the device's peak since the previous boundary, credits
// it to the phase that was current for the device during the interval, and resets the
// allocator's peak. So a phase's device peak is the highest allocated (reserved) bytes of the
// whole device while that phase was current, within the phase only, whatever came before.
//  - The device's phase is process-wide, not per thread (the allocator's counters are one per
//    device): the phase of the scope opened last, on whichever thread; closing a scope restores
//    the device phase it found. Scopes that nest in time (the trainer's backward scope and the
//    FSDP hooks' scopes on autograd's device thread inside it) are attributed exactly; scopes
//    that overlap without nesting are attributed to whichever opened last.
//  - The device figures also count what other threads allocate during a phase.
//  - The tracker owns the allocator's peak statistics while a reader is set: it resets them
//    at every boundary. peakAllocated/peakReserved of the snapshot are its own maxima over
//    the intervals since resetDevicePeaks().
//  - deviceMemorySnapshot() also ends the current interval (credited to the current phase).
//  - A boundary costs one locked read and one reset of the allocator's statistics; without a
//    reader it costs one relaxed atomic load.

// Sets (or with std::nullopt removes) the device the MemoryPhase scopes read; starts a new
// peak interval (resetDevicePeaks()). Only one device per process: a rank trains on one.
void setDeviceMemoryReader(std::optional<DeviceMemoryReader> reader);
// The device's counters and the peaks per phase since resetDevicePeaks(); std::nullopt
// without a reader (CPU).
std::optional<DeviceMemorySnapshot> deviceMemorySnapshot();
// Starts a new device peak interval: the peaks become the current values, every phase's
// peak is cleared and the current phase's starts at the current values.
void resetDevicePeaks();

}  // namespace fs::telemetry
