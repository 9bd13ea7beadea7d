// One data worker: a thread that reads its shards (shard_plan.h), groups tar
// members into samples, shuffles them (sample_shuffle.h), prepares them
// (sample_preparer.h: decode, preprocess, tokenize) and collates batches into
// a bounded prefetch queue. The source takes batch i of an epoch from worker
// i mod workers, as PyTorch's DataLoader does, so the batch stream does not
// depend on thread timing. Each batch carries the reader's position when it
// completed (NOTE [Shard cursor] in shard_cursor.h).
//
// Thread-safety: start/stop/take are called by the one consumer thread; the
// worker thread touches only its own state, the queue (under its mutex) and
// the shared, thread-safe ledger.
#pragma once

#include <atomic>
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
  // The next batch (blocks). Errors: the worker found no usable sample in a
  // whole pass over its shards, or was stopped.
  protocol::StatusOr<Batch> take();

  const WorkerSpec& spec() const { return spec_; }

 private:
  class Builder;

  void run(int64_t epoch, int64_t skip);
  void recordTarProblems(const TarSampleReader& reader);
  bool deliver(protocol::StatusOr<Batch> item);  // false once stopping

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
};

}  // namespace fs::data
