#include "backend/distributed/heartbeat.h"

#include <cstdio>
#include <nlohmann/json.hpp>

namespace fs::distributed {
namespace {

int64_t wallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string key(int rank) {
  return "hb/" + std::to_string(rank);
}

std::string seconds(int64_t ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ms) / 1000.0);
  return buf;
}

}  // namespace

Heartbeat::Heartbeat(c10::intrusive_ptr<c10d::Store> store, int rank, int world,
                     std::vector<const CollectiveTracker*> trackers, std::chrono::milliseconds interval)
    : store_(std::move(store)),
      rank_(rank),
      world_(world),
      trackers_(std::move(trackers)),
      interval_(interval) {
  post();
  thread_ = std::thread([this] { loop(); });
}

Heartbeat::~Heartbeat() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Heartbeat::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, interval_, [this] { return stop_; })) {
    lock.unlock();
    try {
      post();
    } catch (const std::exception&) {
      // The store is gone (rank 0 exited): the training thread finds out at
      // its next collective; beats resume if it ever comes back.
    }
    lock.lock();
  }
}

CollectiveState Heartbeat::combined() const {
  CollectiveState out;
  int64_t seq = 0;
  bool first = true;
  for (const CollectiveTracker* t : trackers_) {
    const CollectiveState s = t->snapshot();
    seq += s.seq;
    // Inside one beats outside any; otherwise the later one.
    const bool better =
        first || (s.inside && !out.inside) || (s.inside == out.inside && s.sinceMs > out.sinceMs);
    if (better) out = s;
    first = false;
  }
  out.seq = seq;
  return out;
}

void Heartbeat::post() {
  const CollectiveState s = combined();
  const nlohmann::json j = {
      {"seq", s.seq}, {"last", s.last}, {"inside", s.inside}, {"since_ms", s.sinceMs}, {"beat_ms", wallMs()}};
  const std::string text = j.dump();
  std::lock_guard<std::mutex> lock(storeMu_);
  store_->set(key(rank_), std::vector<uint8_t>(text.begin(), text.end()));
}

std::vector<PeerBeat> Heartbeat::board() {
  std::vector<PeerBeat> out;
  std::lock_guard<std::mutex> lock(storeMu_);
  for (int r = 0; r < world_; ++r) {
    PeerBeat b;
    b.rank = r;
    if (store_->check({key(r)})) {
      const auto bytes = store_->get(key(r));
      const auto j = nlohmann::json::parse(std::string(bytes.begin(), bytes.end()), nullptr, false);
      if (j.is_object()) {
        b.known = true;
        b.state.seq = j.value("seq", int64_t{0});
        b.state.last = j.value("last", std::string());
        b.state.inside = j.value("inside", false);
        b.state.sinceMs = j.value("since_ms", int64_t{0});
        b.beatMs = j.value("beat_ms", int64_t{0});
      }
    }
    out.push_back(std::move(b));
  }
  return out;
}

std::string Heartbeat::describePeers() {
  std::vector<PeerBeat> beats;
  try {
    beats = board();
  } catch (const std::exception&) {
    return "the run's store on rank 0 is unreachable (rank 0 has exited or its host is down)";
  }
  const int64_t now = wallMs();
  const int64_t stale = std::max<int64_t>(3 * interval_.count(), 5000);
  int64_t maxSeq = 0;
  for (const auto& b : beats) maxSeq = std::max(maxSeq, b.state.seq);
  std::string text;
  for (const auto& b : beats) {
    if (b.rank == rank_) continue;
    std::string line = "rank " + std::to_string(b.rank) + ": ";
    if (!b.known) {
      line += "never posted a heartbeat";
    } else {
      if (now - b.beatMs > stale)
        line += "heartbeat stopped " + seconds(now - b.beatMs) + " ago (process gone or frozen), ";
      line += b.state.inside ? "inside " : "last left ";
      line += "#" + std::to_string(b.state.seq) + " '" + b.state.last + "' " +
              seconds(now - b.state.sinceMs) + " ago";
      if (b.state.seq < maxSeq)
        line += " (behind by " + std::to_string(maxSeq - b.state.seq) + " collectives)";
    }
    text += (text.empty() ? "" : "; ") + line;
  }
  return text.empty() ? text : "peers: " + text;
}

}  // namespace fs::distributed
