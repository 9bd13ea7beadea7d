// Internal to backend/telemetry: the MemoryPhase scopes' hooks into the device peaks by phase
// (NOTE [Device memory by phase] in memory_tracker.h; implemented in device_phase_peaks.cpp).
//
// Thread-safety: any thread.
#pragma once

#include "backend/telemetry/memory_tracker.h"

namespace fs::telemetry::detail {

// Ends the device's current interval (with a reader set) and makes `phase` the device's
// phase; returns the device phase it replaced, for leaveDevicePhase().
Phase enterDevicePhase(Phase phase);
// Ends the device's current interval and makes `restore` the device's phase again.
void leaveDevicePhase(Phase restore);

}  // namespace fs::telemetry::detail
