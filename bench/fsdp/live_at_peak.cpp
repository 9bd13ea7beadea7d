#include "bench/fsdp/live_at_peak.h"

#include <ATen/record_function.h>
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "backend/telemetry/memory_tracker.h"

namespace fs::bench {
namespace {

thread_local std::vector<const char*> t_ops;  // this thread's RecordFunction stack

struct Entry {
  int64_t bytes = 0;
  int label = 0;
};
struct Event {
  void* ptr;
  int64_t bytes;  // < 0: a free
  int label;
};

std::mutex g_mutex;
std::map<std::string, int> g_labelIds;
std::vector<std::string> g_labels;
std::unordered_map<void*, Entry> g_live;  // everything allocated through the wrapper and not freed
std::unordered_map<void*, Entry> g_atStart;
std::vector<Event> g_log;  // this step's events

std::string label() {
  std::string l(telemetry::phaseName(telemetry::currentMemoryPhase()));
  l += ":";
  // The outermost operator says what the model did; the innermost how it allocated.
  if (!t_ops.empty()) l += std::string(" ") + t_ops.front();
  if (t_ops.size() > 1) l += std::string(" > ") + t_ops.back();
  return l;
}

int labelId(const std::string& l) {
  auto [it, fresh] = g_labelIds.emplace(l, static_cast<int>(g_labels.size()));
  if (fresh) g_labels.push_back(l);
  return it->second;
}

struct Inner {
  void* context;
  c10::DeleterFnPtr deleter;
};
std::unordered_map<void*, Inner> g_inner;
c10::Allocator* g_wrapped = nullptr;

void loggedDelete(void* data) {
  if (data == nullptr) return;  // raw_deallocate(nullptr), as oneDNN does
  Inner inner{};
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_inner.find(data);
    inner = it->second;
    g_inner.erase(it);
    auto live = g_live.find(data);
    g_log.push_back({data, -live->second.bytes, live->second.label});
    g_live.erase(live);
  }
  inner.deleter(inner.context);
}

class LoggingAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(std::size_t n) const { return logged(n); }
  c10::DataPtr allocate(std::size_t n) { return logged(n); }
  void copy_data(void* dest, const void* src, std::size_t count) const { std::memcpy(dest, src, count); }
  c10::DeleterFnPtr raw_deleter() const override { return &loggedDelete; }

 private:
  c10::DataPtr logged(std::size_t n) const {
    c10::DataPtr block = g_wrapped->allocate(n);
    void* data = block.get();
    if (n == 0 || data == nullptr) return block;
    const c10::Device device = block.device();
    Inner inner{nullptr, block.get_deleter()};
    inner.context = block.release_context();
    const std::string l = label();
    std::lock_guard<std::mutex> lock(g_mutex);
    const int id = labelId(l);
    g_inner[data] = inner;
    g_live[data] = {static_cast<int64_t>(n), id};
    g_log.push_back({data, static_cast<int64_t>(n), id});
    return c10::DataPtr(data, data, &loggedDelete, device);
  }
};

std::unique_ptr<at::ObserverContext> pushOp(const at::RecordFunction& fn) {
  t_ops.push_back(fn.name());
  return nullptr;
}
void popOp(const at::RecordFunction&, at::ObserverContext*) {
  if (!t_ops.empty()) t_ops.pop_back();
}

}  // namespace

void installLiveAtPeak() {
  static LoggingAllocator* wrapper = nullptr;
  if (wrapper != nullptr) return;
  g_wrapped = c10::GetCPUAllocator();
  wrapper = new LoggingAllocator();  // never freed: storages may outlive everything
  c10::SetCPUAllocator(wrapper, telemetry::kMemoryTrackerPriority + 1);
  at::addGlobalCallback(at::RecordFunctionCallback(&pushOp, &popOp));
}

std::string endLiveAtPeakStep() {
  std::lock_guard<std::mutex> lock(g_mutex);
  // Replay from the step's start to the highest running total.
  int64_t total = 0, best = 0;
  for (const auto& [p, e] : g_atStart) total += e.bytes;
  best = total;
  size_t bestAt = 0;
  for (size_t i = 0; i < g_log.size(); ++i) {
    total += g_log[i].bytes;
    if (total > best) best = total, bestAt = i + 1;
  }
  std::unordered_map<void*, Entry> live = g_atStart;
  for (size_t i = 0; i < bestAt; ++i) {
    const Event& e = g_log[i];
    if (e.bytes > 0) {
      live[e.ptr] = {e.bytes, e.label};
    } else {
      live.erase(e.ptr);
    }
  }
  std::map<int, std::vector<int64_t>> byLabel;
  for (const auto& [p, e] : live) byLabel[e.label].push_back(e.bytes);
  std::vector<std::tuple<int64_t, int, int>> rows;
  for (auto& [l, sizes] : byLabel) {
    int64_t sum = 0;
    for (int64_t b : sizes) sum += b;
    rows.emplace_back(sum, static_cast<int>(sizes.size()), l);
    std::sort(sizes.rbegin(), sizes.rend());
  }
  std::sort(rows.rbegin(), rows.rend());
  std::string out = std::to_string(best) + " total (allocated since the probe started)\n";
  for (const auto& [bytes, count, l] : rows) {
    out +=
        std::to_string(bytes) + " " + std::to_string(count) + " " + g_labels[static_cast<size_t>(l)] + " [";
    const auto& sizes = byLabel[l];
    for (size_t i = 0; i < sizes.size() && i < 12; ++i) out += (i ? " " : "") + std::to_string(sizes[i]);
    out += sizes.size() > 12 ? " ...]\n" : "]\n";
  }
  g_atStart = g_live;
  g_log.clear();
  return out;
}

}  // namespace fs::bench
