// One data worker: a thread that reads its shards (shard_plan.h), groups tar
// members into samples, shuffles them (sample_shuffle.h), prepares them
// (sample_preparer.h: decode, preprocess, tokenize) and collates batches into
// a bounded prefetch queue. The source takes batch i of an epoch from worker
// i mod workers, as PyTorch's DataLoader does, so the batch stream does not
// depend on thread timing. Each batch carries the reader's position when it
// completed (NOTE [Shard cursor] in shard_cursor.h).
//
// NOTE [Data stall]: a shard read can block for ever (a `pipe:` command
// whose remote end went quiet, a hung network file system). The worker
// stamps the time of its last progress (a shard opened, a sample read, a
// batch delivered; the consumer stamps it when it takes a batch, since the
// worker may have been waiting for that room); while the consumer waits on an empty queue and that
// stamp is older than the stall timeout (data.stall_timeout_s), waitReady()
// and take() fail naming the dataset, the worker, the shard it is reading
// (its command for `pipe:` shards) and how far into it. A slow source that
// still yields samples is not stalled. The consumer waits in slices so that
// the training loop can answer stop, pause and checkpoint requests meanwhile.
// The default (300 s) stays below parallel.collective_timeout_s, so that with
// several ranks this error comes before the peers' collective timeout
// (docs/data.md says why the figure).
//
// Thread-safety: start/stop/take are called by the one consumer thread; the
// worker thread touches only its own state, the queue (under its mutex) and
// the shared, thread-safe ledger.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "backend/data/batch.h"
#include "backend/data/drop_ledger.h"
#include "backend/data/sample_preparer.h"
#include "backend/data/shard_plan.h"
#include "backend/data/shards/tar_samples.h"

namespace fs::data {

struct WorkerSpec {
  std::string dataset;
  DatasetKind kind = DatasetKind::kLaion;
  int64_t datasetIndex = 0;
  int64_t worker = 0;
  int64_t batchSize = 1;
  int64_t maxTokens = 32;
  int64_t imagesPerSample = 1;
  int64_t imageSize = 224;
  int64_t padId = 0;
  int64_t quota = 0;  // batches this worker delivers per epoch
  size_t shuffleCapacity = 5000;
  size_t shuffleInitial = 1000;
  size_t prefetch = 2;  // batches queued ahead
  uint64_t seed = 0;
  int64_t rank = 0;
  std::chrono::milliseconds stallTimeout{300'000};  // NOTE [Data stall]
};

class ShardWorker {
 public:
  // The plan, preparer and ledger outlive the worker.
  ShardWorker(WorkerSpec spec, const ShardPlan& plan, const SamplePreparer& preparer, DropLedger& ledger);
  ~ShardWorker();
  ShardWorker(const ShardWorker&) = delete;
  ShardWorker& operator=(const ShardWorker&) = delete;

  // Starts producing epoch `epoch`, discarding its first `skip` batches
  // (exact resume: they are built as before, so drops and coins replay).
  void start(int64_t epoch, int64_t skip);
  // Stops the thread and empties the queue; safe when not started. Never
  // waits on a pipe command that went quiet (its read is interrupted).
  void stop();
  // Waits up to `slice` for a batch (or the end of the epoch) to be
  // ready, so that take() will not block: true when it is, false when the
  // slice ran out first. Error: the worker made no progress for the stall
  // timeout (NOTE [Data stall]).
  protocol::StatusOr<bool> waitReady(std::chrono::milliseconds slice);
  // The next batch: waits for it up to the stall timeout. Errors: the
  // worker stalled (NOTE [Data stall]), found no usable sample in a whole
  // pass over its shards, or was stopped.
  protocol::StatusOr<Batch> take();

  const WorkerSpec& spec() const { return spec_; }

 private:
  class Builder;

  void run(int64_t epoch, int64_t skip);
  void recordTarProblems(const TarSampleReader& reader);
  bool deliver(protocol::StatusOr<Batch> item);  // false once stopping
  void progressed();                             // NOTE [Data stall]: stamps lastProgress_
  void reading(const ShardCursor& cursor);       // the shard the thread opens or reads
  protocol::Status stalled(std::chrono::steady_clock::time_point now) const;  // REQUIRES: mu_ held

  const WorkerSpec spec_;
  const ShardPlan& plan_;
  const SamplePreparer& preparer_;
  DropLedger& ledger_;

  std::thread thread_;
  std::atomic<bool> stopping_{false};
  ReadInterrupt interrupt_;  // wakes a shard read blocked on a pipe command at stop()
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<protocol::StatusOr<Batch>> queue_;
  bool finished_ = true;  // the thread delivered all it will
  // NOTE [Data stall]: the last progress (steady clock, ns) and, under mu_,
  // the shard being read; samplesRead_ counts that shard's samples.
  std::atomic<int64_t> lastProgress_{0};
  std::atomic<int64_t> samplesRead_{0};
  ShardCursor reading_;
};

}  // namespace fs::data
