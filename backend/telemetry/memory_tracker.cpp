// The only LibTorch translation unit of backend/telemetry.
#include "backend/telemetry/memory_tracker.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>

#include "backend/telemetry/device_phase_peaks.h"

namespace fs::telemetry {

namespace {

// ---- counters ----------------------------------------------------------------------

struct alignas(64) Counter {
  std::atomic<std::int64_t> live{0};
  std::atomic<std::int64_t> peak{0};
};

// Trivially destructible, constant-initialised: usable by frees during static destruction.
Counter g_phase[kPhaseCount];
Counter g_total;
// Each phase's live bytes when g_total.peak was last raised (MemorySnapshot::atPeak).
std::atomic<std::int64_t> g_at_peak[kPhaseCount];
std::atomic<std::int64_t> g_allocations{0};
// Every allocation the wrapper served (MemorySnapshot::allocationsMade); never decremented.
std::atomic<std::int64_t> g_allocations_made{0};
// The highest g_total.live since resetStepPeak(): resetMemoryPeaks() leaves it alone.
std::atomic<std::int64_t> g_step_peak{0};

thread_local Phase t_phase = Phase::kOther;

// True when `value` became the new peak.
bool raiseTo(std::atomic<std::int64_t>& peak, std::int64_t value) {
  std::int64_t seen = peak.load(std::memory_order_relaxed);
  while (value > seen) {
    if (peak.compare_exchange_weak(seen, value, std::memory_order_relaxed)) return true;
  }
  return false;
}

void recordPhasesAtPeak() {
  for (std::size_t i = 0; i < kPhaseCount; ++i) {
    g_at_peak[i].store(g_phase[i].live.load(std::memory_order_relaxed), std::memory_order_relaxed);
  }
}

void add(std::size_t phase, std::int64_t bytes) {
  // fetch_add returns each value the counter takes, so the peak is exact (see the NOTE).
  raiseTo(g_phase[phase].peak, g_phase[phase].live.fetch_add(bytes, std::memory_order_relaxed) + bytes);
  const std::int64_t total = g_total.live.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  if (raiseTo(g_total.peak, total)) recordPhasesAtPeak();
  raiseTo(g_step_peak, total);
  g_allocations.fetch_add(1, std::memory_order_relaxed);
}

void sub(std::size_t phase, std::int64_t bytes) {
  g_phase[phase].live.fetch_sub(bytes, std::memory_order_relaxed);
  g_total.live.fetch_sub(bytes, std::memory_order_relaxed);
  g_allocations.fetch_sub(1, std::memory_order_relaxed);
}

// ---- the allocator wrapper -----------------------------------------------------------

// NOTE [Tracked allocation layout]
// The wrapper asks the wrapped allocator for n + kHeaderBytes and hands out the memory
// after a header that remembers the wrapped allocator's context and deleter, the
// requested size and the phase. The DataPtr it returns has context == data and a
// plain function deleter, like LibTorch's own CPU allocator, so raw_allocate /
// raw_deallocate and "simple data pointer" checks keep working. The header is as large
// as LibTorch's CPU alignment requirement, so the data stays aligned as LibTorch's own.
constexpr std::size_t kHeaderBytes = 64;
static_assert(kHeaderBytes % c10::gAlignment == 0);
constexpr std::uint32_t kMagic = 0x46534d54;  // "FSMT"

struct Header {
  void* inner_context;
  c10::DeleterFnPtr inner_deleter;
  std::size_t nbytes;
  std::uint32_t magic;
  std::uint8_t phase;
};
static_assert(sizeof(Header) <= kHeaderBytes);

void trackedDelete(void* data) {
  if (data == nullptr) return;
  Header h;
  std::memcpy(&h, static_cast<char*>(data) - kHeaderBytes, sizeof h);
  TORCH_INTERNAL_ASSERT(h.magic == kMagic, "memory tracker: freeing memory it did not allocate");
  sub(h.phase, static_cast<std::int64_t>(h.nbytes));
  h.inner_deleter(h.inner_context);  // the wrapped allocator frees its own block, header included
}

// NOTE [Allocator interface across LibTorch versions]
// LibTorch 1.13 declares `DataPtr allocate(size_t) const`; 2.x releases later made it
// non-const and added a pure virtual `copy_data`. The members below carry no
// `override`, so each overrides whichever of them the installed version declares and is
// an ordinary member function otherwise.
class TrackingAllocator final : public c10::Allocator {
 public:
  explicit TrackingAllocator(c10::Allocator* inner) : inner_(inner) {}

  c10::DataPtr allocate(std::size_t n) const { return allocateTracked(n); }  // LibTorch 1.13 - 2.2
  c10::DataPtr allocate(std::size_t n) { return allocateTracked(n); }        // later
  void copy_data(void* dest, const void* src, std::size_t count) const { std::memcpy(dest, src, count); }
  c10::DeleterFnPtr raw_deleter() const override { return &trackedDelete; }

  c10::Allocator* inner() const { return inner_; }

 private:
  c10::DataPtr allocateTracked(std::size_t n) const {
    if (n == 0) return inner_->allocate(0);  // nothing to count; keeps LibTorch's null data pointer
    TORCH_CHECK(n <= std::numeric_limits<std::size_t>::max() - kHeaderBytes,
                "memory tracker: cannot allocate ", n, " bytes");
    c10::DataPtr block = inner_->allocate(n + kHeaderBytes);
    auto* base = static_cast<char*>(block.get());
    if (base == nullptr) return block;  // not reached with LibTorch's allocator (it throws)
    Header h{};
    h.inner_deleter = block.get_deleter();
    h.nbytes = n;
    h.magic = kMagic;
    h.phase = static_cast<std::uint8_t>(t_phase);
    c10::Device device = block.device();
    h.inner_context = block.release_context();
    std::memcpy(base, &h, sizeof h);
    add(h.phase, static_cast<std::int64_t>(n));
    g_allocations_made.fetch_add(1, std::memory_order_relaxed);
    void* data = base + kHeaderBytes;
    return c10::DataPtr(data, data, &trackedDelete, device);
  }

  c10::Allocator* inner_;
};

std::mutex g_install_mutex;
std::atomic<TrackingAllocator*> g_tracker{nullptr};

std::int64_t kibLine(const char* text, const char* key) {
  const char* at = std::strstr(text, key);
  if (at == nullptr) return 0;
  return std::strtoll(at + std::strlen(key), nullptr, 10) * 1024;
}

}  // namespace

std::string_view phaseName(Phase phase) {
  switch (phase) {
    case Phase::kParameters:
      return "parameters";
    case Phase::kGradients:
      return "gradients";
    case Phase::kOptimizer:
      return "optimizer";
    case Phase::kGathered:
      return "gathered";
    case Phase::kActivations:
      return "activations";
    case Phase::kOther:
      return "other";
  }
  return "other";
}

MemoryPhase::MemoryPhase(Phase phase) : previous_(t_phase), devicePrevious_(detail::enterDevicePhase(phase)) {
  t_phase = phase;
}

MemoryPhase::~MemoryPhase() {
  t_phase = previous_;
  detail::leaveDevicePhase(devicePrevious_);
}

Phase currentMemoryPhase() {
  return t_phase;
}

protocol::RankMemory MemorySnapshot::toRankMemory(int rank) const {
  protocol::RankMemory m;
  m.rank = rank;
  m.rss_bytes = process.rss_bytes;
  m.peak_bytes = process.peak_rss_bytes;
  m.params = (*this)[Phase::kParameters].peak;
  m.grads = (*this)[Phase::kGradients].peak;
  m.optimizer = (*this)[Phase::kOptimizer].peak;
  m.gathered = (*this)[Phase::kGathered].peak;
  m.activations = (*this)[Phase::kActivations].peak;
  if (device) {
    m.device = device->device;
    m.device_bytes = device->allocated;
    m.device_peak = device->peakAllocated;
    m.device_reserved = device->reserved;
    m.device_reserved_peak = device->peakReserved;
    for (std::size_t i = 0; i < kPhaseCount; ++i) {
      const DevicePhasePeak& p = device->phases[i];
      if (p.seen) m.device_phases[std::string(phaseName(static_cast<Phase>(i)))] = {p.allocated, p.reserved};
    }
  }
  return m;
}

protocol::Status installCpuMemoryTracker(std::uint8_t priority) {
  std::lock_guard<std::mutex> lock(g_install_mutex);
  TrackingAllocator* tracker = g_tracker.load();
  if (tracker == nullptr) {
    c10::Allocator* current = c10::GetCPUAllocator();
    // Never freed: storages allocated through it may live until the process ends.
    tracker = new TrackingAllocator(current);
  }
  if (c10::GetCPUAllocator() != tracker) c10::SetCPUAllocator(tracker, priority);
  if (c10::GetCPUAllocator() != tracker) {
    return protocol::Status::unsupported(
        "memory tracker: LibTorch kept its current CPU allocator (one of priority > " +
        std::to_string(priority) + " is installed); CPU memory by phase is not available");
  }
  g_tracker.store(tracker);
  return protocol::Status::ok();
}

bool cpuMemoryTrackerInstalled() {
  TrackingAllocator* tracker = g_tracker.load();
  return tracker != nullptr && c10::GetCPUAllocator() == tracker;
}

void trackExternalBytes(Phase phase, std::int64_t bytes) {
  if (!cpuMemoryTrackerInstalled() || bytes == 0) return;
  if (bytes > 0) {
    add(static_cast<std::size_t>(phase), bytes);
  } else {
    sub(static_cast<std::size_t>(phase), -bytes);
  }
}

MemorySnapshot memorySnapshot() {
  MemorySnapshot s;
  s.tracking = g_tracker.load() != nullptr;
  for (std::size_t i = 0; i < kPhaseCount; ++i) {
    s.phases[i].live = g_phase[i].live.load(std::memory_order_relaxed);
    s.phases[i].peak = g_phase[i].peak.load(std::memory_order_relaxed);
  }
  for (std::size_t i = 0; i < kPhaseCount; ++i) s.atPeak[i] = g_at_peak[i].load(std::memory_order_relaxed);
  s.total.live = g_total.live.load(std::memory_order_relaxed);
  s.total.peak = g_total.peak.load(std::memory_order_relaxed);
  s.stepPeak = g_step_peak.load(std::memory_order_relaxed);
  s.allocations = g_allocations.load(std::memory_order_relaxed);
  s.allocationsMade = g_allocations_made.load(std::memory_order_relaxed);
  s.process = readProcessMemory();
  s.device = deviceMemorySnapshot();
  return s;
}

void resetMemoryPeaks() {
  for (auto& c : g_phase) c.peak.store(c.live.load(std::memory_order_relaxed), std::memory_order_relaxed);
  g_total.peak.store(g_total.live.load(std::memory_order_relaxed), std::memory_order_relaxed);
  recordPhasesAtPeak();
}

void resetStepPeak() {
  g_step_peak.store(g_total.live.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

ProcessMemory readProcessMemory() {
  ProcessMemory m;
  std::FILE* f = std::fopen("/proc/self/status", "re");
  if (f == nullptr) return m;
  char buf[8192];
  std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  m.rss_bytes = kibLine(buf, "\nVmRSS:");
  m.peak_rss_bytes = kibLine(buf, "\nVmHWM:");
  return m;
}

}  // namespace fs::telemetry
