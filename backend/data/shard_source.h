// The WebDataset shard pipeline behind the DataSource interface: per dataset,
// a shard plan, `workers` worker threads (shard_worker.h) and a drop ledger.
//
//   shards --plan--> worker 0 ... worker W-1 --(batch i from worker i mod W)--> next()
//
// Epochs, batch counts and the per-rank split follow derived.h and the spec
// (section 3, Pipeline); NOTE [Shard order] in shard_plan.h says how shards
// are ordered and split.
//
// NOTE [Shard resume]: a position is (epoch, batches consumed per dataset).
// restore() restarts the epoch and lets each worker rebuild and discard the
// batches it had delivered: every sample is read, decoded and coin-flipped as
// before, so drops and random draws replay and the next batch is exactly the
// one an uninterrupted run would have seen. The cost is reading the epoch's
// consumed part again (data time, no training), paid once per resume.
// The position also carries each dataset's cursor from the last batch
// consumed (NOTE [Data position cursors] in data_position.h): restore() puts
// the saved cursors back, so position() right after restore() equals the
// saved one, and the replayed batches bring the same cursors as before.
//
// Thread-safety: one consumer thread (the rank's training loop).
#pragma once

#include <memory>
#include <vector>

#include "backend/data/data_source.h"
#include "backend/data/drop_ledger.h"
#include "backend/data/sample_preparer.h"
#include "backend/data/shard_plan.h"
#include "backend/data/shard_worker.h"
#include "backend/data/tokenizer/tokenizer.h"
#include "backend/protocol/config/config_types.h"

namespace fs::data {

class ShardSource final : public DataSource {
 public:
  // Builds plans, preparers and workers for every dataset; errors name the
  // config field (shards that do not expand, too few shards for the split,
  // token ids that disagree with the tokenizer).
  // `shardFiles` (may be empty, or shorter than the dataset list): shardFiles[i], when not
  // empty, replaces datasets[i].shards with these file paths, read as files only
  // (ShardPlan::fromFiles; data.source generated).
  static protocol::StatusOr<std::unique_ptr<ShardSource>> create(
      const protocol::RunConfig& config, int64_t rank, int64_t world,
      std::shared_ptr<const Tokenizer> tokenizer,
      const std::vector<std::vector<std::string>>& shardFiles = {});
  ~ShardSource() override;

  protocol::StatusOr<std::optional<StepBatches>> next() override;
  // Ready when the worker of each dataset's next batch has it queued (or
  // has finished); errors when one stalled (NOTE [Data stall] in shard_worker.h).
  protocol::StatusOr<bool> waitReady(std::chrono::milliseconds slice) override;
  void setEpoch(int64_t epoch) override;
  int64_t epoch() const override { return epoch_; }
  int64_t stepsPerEpoch() const override { return stepsPerEpoch_; }
  const std::vector<DatasetInfo>& datasets() const override { return infos_; }
  DataPosition position() const override;
  protocol::Status restore(const DataPosition& position) override;
  std::map<std::string, DatasetDrops> dropCounts() const override;
  int64_t notAccepted() const override;
  std::vector<std::string> takeProblems() override;

 private:
  struct Dataset {
    std::unique_ptr<ShardPlan> plan;
    std::unique_ptr<SamplePreparer> preparer;
    std::unique_ptr<DropLedger> ledger;
    std::vector<std::unique_ptr<ShardWorker>> workers;
  };

  ShardSource() = default;
  void startWorkers();
  void stopWorkers();

  std::shared_ptr<const Tokenizer> tokenizer_;
  std::vector<DatasetInfo> infos_;
  std::vector<Dataset> datasets_;
  double maxDropRatePct_ = 1.0;
  int64_t rank_ = 0;
  int64_t world_ = 1;
  int64_t epoch_ = 0;
  int64_t stepsPerEpoch_ = 0;
  int64_t step_ = 0;
  std::vector<int64_t> consumed_;
  std::vector<ShardCursor>
      cursors_;  // of the last batch consumed per dataset; empty before the epoch's first
  bool started_ = false;
};

}  // namespace fs::data
