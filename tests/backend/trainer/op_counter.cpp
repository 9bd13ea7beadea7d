#include "tests/backend/trainer/op_counter.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string_view>

namespace fs::testing {

namespace {

// One tally for the process: RecordFunction callbacks are plain function pointers.
struct Tally {
  std::mutex mutex;
  OpCounts counts;
  std::atomic<bool> owned{false};
};

Tally& tally() {
  static Tally* const t = new Tally;  // never destroyed: a late end callback may still touch it
  return *t;
}

// Nesting depth of FUNCTION records on this thread (NOTE [Top-level ops]).
thread_local int t_depth = 0;

// The autograd engine's FUNCTION record around each node it evaluates (engine.cpp).
constexpr std::string_view kEngineWrapper = "autograd::engine::evaluate_function: ";
bool engineWrapper(const at::RecordFunction& fn) {
  return std::string_view(fn.name()).substr(0, kEngineWrapper.size()) == kEngineWrapper;
}

std::unique_ptr<at::ObserverContext> onStart(const at::RecordFunction& fn) {
  Tally& t = tally();
  if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
    std::lock_guard<std::mutex> lock(t.mutex);
    ++t.counts.backwardNodes[fn.name()];
    return nullptr;
  }
  if (engineWrapper(fn)) return nullptr;
  const bool topLevel = t_depth++ == 0;
  std::lock_guard<std::mutex> lock(t.mutex);
  ++t.counts.all[fn.name()];
  if (topLevel) ++t.counts.topLevel[fn.name()];
  return nullptr;
}

void onEnd(const at::RecordFunction& fn, at::ObserverContext* /*context*/) {
  if (fn.scope() == at::RecordScope::FUNCTION && !engineWrapper(fn) && t_depth > 0) --t_depth;
}

}  // namespace

std::int64_t OpCounts::total(const OpTally& tally) {
  std::int64_t n = 0;
  for (const auto& [name, count] : tally) n += count;
  return n;
}

std::vector<std::pair<std::string, std::int64_t>> OpCounts::top(const OpTally& tally, std::size_t n) {
  std::vector<std::pair<std::string, std::int64_t>> v(tally.begin(), tally.end());
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (v.size() > n) v.resize(n);
  return v;
}

OpCounter::OpCounter() {
  Tally& t = tally();
  if (t.owned.exchange(true)) throw std::logic_error("OpCounter: another OpCounter is alive");
  {
    std::lock_guard<std::mutex> lock(t.mutex);
    t.counts = OpCounts{};
  }
  t_depth = 0;
  handle_ =
      at::addGlobalCallback(at::RecordFunctionCallback(&onStart, &onEnd)
                                .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
}

OpCounter::~OpCounter() {
  at::removeCallback(handle_);
  tally().owned.store(false);
}

OpCounts OpCounter::take() {
  Tally& t = tally();
  std::lock_guard<std::mutex> lock(t.mutex);
  return std::exchange(t.counts, OpCounts{});
}

}  // namespace fs::testing
