// The device's memory peaks by phase (NOTE [Device memory by phase] in memory_tracker.h).
// Plain C++: the device is read through the DeviceMemoryReader's functions.
#include "backend/telemetry/device_phase_peaks.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <utility>

namespace fs::telemetry {

namespace {

// True while a reader is set; read without the lock so that boundaries cost nothing on CPU.
std::atomic<bool> g_has_reader{false};
// The device's phase (process-wide); changed under g_mutex while a reader is set.
std::atomic<Phase> g_device_phase{Phase::kOther};

std::mutex g_mutex;
std::optional<DeviceMemoryReader> g_reader;  // guarded by g_mutex
DeviceMemorySnapshot g_acc;                  // guarded by g_mutex: the interval's maxima

std::size_t phaseSlot(Phase p) {
  return static_cast<std::size_t>(p);
}

// Ends the current interval: credits the allocator's peak since the last boundary to the
// device's current phase, then restarts the allocator's peak. REQUIRES: g_mutex, g_reader.
void foldLocked() {
  const DeviceMemoryReading r = g_reader->read();
  DevicePhasePeak& phase = g_acc.phases[phaseSlot(g_device_phase.load())];
  phase.allocated = std::max(phase.allocated, r.peakAllocated);
  phase.reserved = std::max(phase.reserved, r.peakReserved);
  phase.seen = true;
  g_acc.peakAllocated = std::max(g_acc.peakAllocated, r.peakAllocated);
  g_acc.peakReserved = std::max(g_acc.peakReserved, r.peakReserved);
  g_acc.allocated = r.allocated;
  g_acc.reserved = r.reserved;
  g_reader->resetPeak();
}

// A boundary: fold, then switch the device's phase. Called from MemoryPhase's destructor too,
// so a reader's exception loses the interval rather than escaping (NOTE in memory_tracker.h).
Phase boundary(Phase next) {
  if (!g_has_reader.load(std::memory_order_acquire)) return g_device_phase.exchange(next);
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_reader) {
    try {
      foldLocked();
    } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw; the interval is lost
    }
  }
  return g_device_phase.exchange(next);
}

void resetLocked() {
  g_acc = DeviceMemorySnapshot{};
  if (!g_reader) return;
  g_reader->resetPeak();
  const DeviceMemoryReading r = g_reader->read();
  g_acc.device = g_reader->device;
  g_acc.allocated = g_acc.peakAllocated = r.allocated;
  g_acc.reserved = g_acc.peakReserved = r.reserved;
  g_acc.phases[phaseSlot(g_device_phase.load())] = {r.allocated, r.reserved, true};
}

}  // namespace

namespace detail {
Phase enterDevicePhase(Phase phase) {
  return boundary(phase);
}
void leaveDevicePhase(Phase restore) {
  boundary(restore);
}
}  // namespace detail

void setDeviceMemoryReader(std::optional<DeviceMemoryReader> reader) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_reader = std::move(reader);
  g_has_reader.store(g_reader.has_value(), std::memory_order_release);
  resetLocked();
}

std::optional<DeviceMemorySnapshot> deviceMemorySnapshot() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_reader) return std::nullopt;
  foldLocked();
  return g_acc;
}

void resetDevicePeaks() {
  std::lock_guard<std::mutex> lock(g_mutex);
  resetLocked();
}

}  // namespace fs::telemetry
