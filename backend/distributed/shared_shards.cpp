#include "backend/distributed/shared_shards.h"

#include <stdexcept>
#include <string>

#include "backend/distributed/shm_segment.h"

namespace fs::distributed {

// The control block's counters, read as NOTE [Node-shared shards]'s:
// `published` = writes ended (the generation its parts hold), `completed` = generations this rank is done
// reading.

SharedShards::SharedShards(std::unique_ptr<ShmSegment> seg, int rank, std::chrono::milliseconds timeout)
    : seg_(std::move(seg)), rank_(rank), timeout_(timeout) {}

SharedShards::~SharedShards() = default;

int SharedShards::size() const {
  return seg_->size();
}
// The ranks' arenas lie end to end: one region.
uint8_t* SharedShards::data() const {
  return seg_->arena(0);
}
uint64_t SharedShards::bytes() const {
  return seg_->arenaBytes() * static_cast<uint64_t>(seg_->size());
}

namespace {

// Called before every gather: builds no text unless it has to wait.
void waitAll(ShmSegment& seg, int rank, std::chrono::milliseconds timeout, std::string_view what,
             std::atomic<uint64_t> ShmRankControl::*counter, uint64_t atLeast, const char* state) {
  auto lagging = [&] {
    std::string who;
    for (int r = 0; r < seg.size(); ++r) {
      if ((seg.control(r).*counter).load() < atLeast) who += (who.empty() ? "" : ", ") + std::to_string(r);
    }
    return who;
  };
  auto ready = [&] {
    for (int r = 0; r < seg.size(); ++r) {
      if ((seg.control(r).*counter).load() < atLeast) return false;
    }
    return true;
  };
  if (ready()) return;
  auto cause = waitOnSegment(
      seg, rank, ready,
      [&] { return "rank(s) " + lagging() + " " + state + " " + std::to_string(atLeast) + " of the shards"; },
      timeout);
  if (cause) throw std::runtime_error("shared shards: " + std::string(what) + ": " + *cause);
}

}  // namespace

void SharedShards::awaitWritten(std::string_view what) {
  waitAll(*seg_, rank_, timeout_, what, &ShmRankControl::published, generation_, "to write generation");
}

void SharedShards::beginWrite(std::string_view what) {
  if (writing_) throw std::logic_error("shared shards: beginWrite twice without endWrite");
  writing_ = true;
  seg_->control(rank_).completed.store(generation_);
  seg_->notifyAll();
  waitAll(*seg_, rank_, timeout_, what, &ShmRankControl::completed, generation_,
          "to finish reading generation");
}

void SharedShards::endWrite() {
  writing_ = false;
  ++generation_;
  seg_->control(rank_).published.store(generation_);
  seg_->notifyAll();
}

}  // namespace fs::distributed
