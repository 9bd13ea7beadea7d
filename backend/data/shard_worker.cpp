#include "backend/data/shard_worker.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "backend/data/sample_shuffle.h"
#include "backend/data/shards/tar_samples.h"

namespace fs::data {

using protocol::Status;
using protocol::StatusOr;

namespace {
using Clock = std::chrono::steady_clock;

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// How a shard reads in a message: a `pipe:` shard by its command.
std::string describeShard(const std::string& shard) {
  constexpr std::string_view kPipe = "pipe:";
  if (shard.rfind(kPipe, 0) == 0) return "command '" + shard.substr(kPipe.size()) + "'";
  return "'" + shard + "'";
}

// "600" for whole seconds, else "1.2".
std::string seconds(std::chrono::milliseconds d) {
  const int64_t ms = d.count();
  if (ms % 1000 == 0) return std::to_string(ms / 1000);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(ms) / 1000.0);
  return buf;
}

constexpr uint64_t kWorkerRngTag = 0x574F524BULL;  // "WORK"
constexpr uint64_t kShuffleTag = 0x53485546ULL;    // "SHUF"
}  // namespace

// Rows of one batch under construction: pixels go straight into the images
// tensor, ids into per-row vectors padded at finish().
//
// NOTE [Dirty image slots]
// A batch's images are tens of MB (an MMC4 row is max_num_images pictures,
// most of them zero padding), and zeroing every row before preparing it took
// more time than the pictures' base64 decoding. So each pooled tensor keeps,
// per row, how many leading image slots may hold an older batch's pixels;
// when a sample is committed, only the slots after the ones it wrote and up
// to that mark are zeroed. A failed sample may leave slots half written: it
// only raises the mark. A fresh tensor's rows are all marked dirty.
class ShardWorker::Builder {
 public:
  explicit Builder(const WorkerSpec& s) : spec_(s) {
    pool_.reserve(kPoolSize);
    reset();
  }

  bool empty() const { return rows_ == 0; }
  bool full() const { return rows_ == spec_.batchSize; }

  SampleSlot& slot() {
    slot_.ids.clear();
    slot_.imagesWritten = 0;
    slot_.pixels = images().data_ptr<float>() + rows_ * rowFloats();
    return slot_;
  }
  void commit() {
    int64_t& dirty = current_->dirty[static_cast<size_t>(rows_)];
    const int64_t written = std::min(slot_.imagesWritten, spec_.imagesPerSample);
    if (dirty > written) {
      std::memset(slot_.pixels + written * imageFloats(), 0,
                  static_cast<size_t>((dirty - written) * imageFloats()) * sizeof(float));
    }
    dirty = written;
    ids_[static_cast<size_t>(rows_)] = std::move(slot_.ids);
    ++rows_;
  }
  void discard() {
    int64_t& dirty = current_->dirty[static_cast<size_t>(rows_)];
    dirty = std::max(dirty, std::min(slot_.imagesWritten, spec_.imagesPerSample));
  }

  Batch finish(bool padToMax) {
    int64_t width = spec_.maxTokens;
    if (!padToMax) {
      width = 1;
      for (const auto& row : ids_) width = std::max<int64_t>(width, static_cast<int64_t>(row.size()));
    }
    Batch b;
    b.dataset = spec_.dataset;
    b.kind = spec_.kind;
    b.images = images();
    b.inputIds = torch::full({spec_.batchSize, width}, spec_.padId, torch::kInt64);
    b.attentionMask = torch::zeros({spec_.batchSize, width}, torch::kInt64);
    auto ids = b.inputIds.accessor<int64_t, 2>();
    auto mask = b.attentionMask.accessor<int64_t, 2>();
    for (int64_t r = 0; r < spec_.batchSize; ++r) {
      const auto& row = ids_[static_cast<size_t>(r)];
      const auto n = std::min<int64_t>(width, static_cast<int64_t>(row.size()));
      for (int64_t t = 0; t < n; ++t) {
        ids[r][t] = row[static_cast<size_t>(t)];
        mask[r][t] = 1;
      }
      b.tokens += n;
    }
    b.samples = spec_.batchSize;
    reset();
    return b;
  }

 private:
  struct Images {
    torch::Tensor tensor;
    std::vector<int64_t> dirty;  // per row, see NOTE [Dirty image slots]
  };

  int64_t imageFloats() const { return 3 * spec_.imageSize * spec_.imageSize; }
  int64_t rowFloats() const { return spec_.imagesPerSample * imageFloats(); }
  const torch::Tensor& images() const { return current_->tensor; }
  void reset() {
    rows_ = 0;
    current_ = acquireImages();
    ids_.assign(static_cast<size_t>(spec_.batchSize), {});
  }

  // A fresh tensor per batch spent more time in page faults than in JPEG
  // decoding. Tensors the consumer has let go of (no other handle, no view)
  // are reused; past the pool's size a batch gets a tensor of its own.
  Images* acquireImages() {
    for (auto& pooled : pool_) {
      if (pooled.tensor.use_count() == 1 && pooled.tensor.storage().use_count() == 1) return &pooled;
    }
    Images fresh{
        torch::empty({spec_.batchSize, spec_.imagesPerSample, 1, 3, spec_.imageSize, spec_.imageSize}),
        std::vector<int64_t>(static_cast<size_t>(spec_.batchSize), spec_.imagesPerSample)};
    if (pool_.size() < kPoolSize) {
      pool_.push_back(std::move(fresh));  // never reallocates: reserved
      return &pool_.back();
    }
    loose_ = std::move(fresh);
    return &loose_;
  }

  static constexpr size_t kPoolSize = 8;  // queued + being built + held by the training step, with room
  std::vector<Images> pool_;
  Images loose_;

  const WorkerSpec& spec_;
  int64_t rows_ = 0;
  Images* current_ = nullptr;
  std::vector<std::vector<int64_t>> ids_;
  SampleSlot slot_;
};

ShardWorker::ShardWorker(WorkerSpec spec, const ShardPlan& plan, const SamplePreparer& preparer,
                         DropLedger& ledger)
    : spec_(std::move(spec)), plan_(plan), preparer_(preparer), ledger_(ledger) {}

ShardWorker::~ShardWorker() {
  stop();
}

void ShardWorker::start(int64_t epoch, int64_t skip) {
  stop();
  stopping_ = false;
  interrupt_.reset();
  {
    std::lock_guard lock(mu_);
    finished_ = false;
    reading_ = ShardCursor{};
  }
  samplesRead_ = 0;
  progressed();
  thread_ = std::thread([this, epoch, skip] { run(epoch, skip); });
}

void ShardWorker::stop() {
  stopping_ = true;
  interrupt_.trigger();
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mu_);
  queue_.clear();
  finished_ = true;
}

void ShardWorker::progressed() {
  lastProgress_.store(nowNs(), std::memory_order_relaxed);
}

void ShardWorker::reading(const ShardCursor& cursor) {
  std::lock_guard lock(mu_);
  reading_ = cursor;
}

Status ShardWorker::stalled(Clock::time_point now) const {
  const auto last =
      Clock::time_point(std::chrono::nanoseconds(lastProgress_.load(std::memory_order_relaxed)));
  const auto quiet = std::chrono::duration_cast<std::chrono::milliseconds>(now - last);
  if (quiet < spec_.stallTimeout) return Status::ok();
  std::string where = reading_.shard.empty()
                          ? std::string("before opening its first shard")
                          : "reading shard " + std::to_string(reading_.shardIndex + 1) + " of " +
                                std::to_string(reading_.shardCount) + ", " + describeShard(reading_.shard) +
                                " (" + std::to_string(samplesRead_.load()) + " samples read from it, pass " +
                                std::to_string(reading_.pass) + ")";
  return Status::ioError("dataset " + spec_.dataset + ": data worker " + std::to_string(spec_.worker) +
                         " of rank " + std::to_string(spec_.rank) + " delivered nothing for " +
                         seconds(quiet) + " s (data.stall_timeout_s = " + seconds(spec_.stallTimeout) +
                         "), " + where + "; check that the shard's source still answers");
}

StatusOr<bool> ShardWorker::waitReady(std::chrono::milliseconds slice) {
  std::unique_lock lock(mu_);
  const auto ready = [&] { return !queue_.empty() || finished_; };
  // Never past the stall deadline, so a stall is reported when it is due, not a slice later.
  const auto stallAt = Clock::time_point(std::chrono::nanoseconds(lastProgress_.load())) + spec_.stallTimeout;
  if (cv_.wait_until(lock, std::min(Clock::now() + slice, stallAt), ready)) return true;
  if (Status s = stalled(Clock::now()); !s) return s;
  return false;
}

StatusOr<Batch> ShardWorker::take() {
  constexpr std::chrono::milliseconds kSlice{1000};
  for (;;) {
    auto ready = waitReady(std::min(kSlice, spec_.stallTimeout));
    if (!ready) return ready.status();
    if (ready.value()) break;
  }
  std::unique_lock lock(mu_);
  if (queue_.empty()) {
    return Status::invalidArgument("dataset " + spec_.dataset + ": worker " + std::to_string(spec_.worker) +
                                   " has no more batches this epoch");
  }
  StatusOr<Batch> item = std::move(queue_.front());
  queue_.pop_front();
  progressed();  // the worker may have waited for this room: its quiet time starts now
  cv_.notify_all();
  return item;
}

bool ShardWorker::deliver(StatusOr<Batch> item) {
  std::unique_lock lock(mu_);
  // No timeout: the consumer may be paused for days; stop() wakes it.
  cv_.wait(lock, [&] { return queue_.size() < spec_.prefetch || stopping_; });
  if (stopping_) return false;
  queue_.push_back(std::move(item));
  progressed();
  cv_.notify_all();
  return true;
}

void ShardWorker::recordTarProblems(const TarSampleReader& reader) {
  // Skipped directory entries and extension-less members are not samples;
  // the rest lost (part of) a sample and count against the drop rate.
  const DropCounts& drops = reader.drops();
  for (DropReason r :
       {DropReason::kUnsafeName, DropReason::kTooLarge, DropReason::kCorruptTar, DropReason::kEmptyShard}) {
    if (drops[r] > 0) {
      ledger_.drop(reader.url(), std::string(dropReasonName(r)), "", static_cast<int64_t>(drops[r]));
    }
  }
  for (const auto& message : reader.problems()) ledger_.note(message);
}

void ShardWorker::run(int64_t epoch, int64_t skip) {
  const auto e = static_cast<uint64_t>(epoch);
  const auto r = static_cast<uint64_t>(spec_.rank);
  const auto w = static_cast<uint64_t>(spec_.worker);
  const auto d = static_cast<uint64_t>(spec_.datasetIndex);
  Rng rng(mixKey({kWorkerRngTag, spec_.seed, e, r, w, d}));
  Builder builder(spec_);
  ShardCursor cursor;  // NOTE [Shard cursor]: the reader's position, stamped on each batch it completes
  cursor.shardCount = static_cast<int64_t>(plan_.shards().size());
  cursor.worker = spec_.worker;
  int64_t produced = 0;
  int64_t accepted = 0;  // this worker's, for the empty-pass check
  bool flip = false;

  // Prepares one sample into the batch; false once the quota is met or the
  // worker is stopping.
  const auto feed = [&](const Sample& sample) -> bool {
    if (builder.empty() && preparer_.flipPerBatch()) flip = rng.coin(0.5);
    SampleSlot& slot = builder.slot();
    if (auto dropped = preparer_.prepare(sample, rng, flip, slot)) {
      builder.discard();
      ledger_.drop(sample.url, dropped->reason, sample.key + ": " + dropped->detail);
      return true;
    }
    ledger_.accept();
    ++accepted;
    builder.commit();
    if (!builder.full()) return true;
    Batch batch = builder.finish(preparer_.padToMaxTokens());
    batch.cursor = cursor;
    if (produced++ >= skip && !deliver(std::move(batch))) return false;
    return produced < spec_.quota && !stopping_;
  };

  bool going = spec_.quota > 0;
  for (int64_t pass = 0; going && !stopping_; ++pass) {
    const auto indices = plan_.workerShardIndices(epoch, pass, spec_.worker);
    const int64_t acceptedBefore = accepted;
    SampleShuffle<Sample> shuffle(spec_.shuffleCapacity, spec_.shuffleInitial,
                                  mixKey({kShuffleTag, spec_.seed, e, r, w, d, static_cast<uint64_t>(pass)}));
    for (size_t index : indices) {
      if (!going || stopping_) break;
      const std::string& shard = plan_.shards()[index];
      ShardCursor opening = cursor;  // for a stall message; the batches' cursor changes once it is open
      opening.shard = shard;
      opening.shardIndex = static_cast<int64_t>(index);
      opening.pass = pass;
      samplesRead_ = 0;
      reading(opening);  // before open: starting a pipe command may already block
      progressed();
      TarReaderOptions options;
      options.interrupt = &interrupt_;
      options.filesOnly = plan_.filesOnly();
      auto reader = TarSampleReader::open(shard, options);
      if (!reader) {
        ledger_.drop(shard, "unreadable_shard", reader.status().message());
        continue;
      }
      cursor.shard = shard;
      cursor.shardIndex = static_cast<int64_t>(index);
      cursor.samplesRead = 0;
      cursor.pass = pass;
      while (going && !stopping_) {
        auto sample = reader->next();
        if (!sample) {
          // A read interrupted by stop() is not the shard's fault.
          if (!stopping_) ledger_.drop(shard, "unreadable_shard", sample.status().message());
          break;
        }
        if (!sample->has_value()) break;
        ++cursor.samplesRead;
        ++samplesRead_;
        progressed();
        if (auto out = shuffle.push(std::move(**sample))) going = feed(*out);
      }
      reader->close();
      recordTarProblems(*reader);
    }
    while (going && !stopping_) {
      auto out = shuffle.drain();
      if (!out) break;
      going = feed(*out);
    }
    if (going && !stopping_ && accepted == acceptedBefore) {
      deliver(Status::invalidArgument(
          "dataset " + spec_.dataset + ": worker " + std::to_string(spec_.worker) + " of rank " +
          std::to_string(spec_.rank) + " found no usable sample in " + std::to_string(indices.size()) +
          " shard(s) (first: " + (indices.empty() ? std::string("none") : plan_.shards()[indices.front()]) +
          "); see the data_stats counts and the rank log"));
      break;
    }
  }
  std::lock_guard lock(mu_);
  finished_ = true;
  cv_.notify_all();
}

}  // namespace fs::data
