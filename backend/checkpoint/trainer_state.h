// TrainerState: the live objects a checkpoint saves: the model, optimizer, schedule, data
// stream and the counters of where training stands. The Trainer owns one;
// the Checkpointer saves it and on resume loads into it; the trainer's
// other parts read it.
//
// Thread-safety: the rank's training thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/data/data_source.h"
#include "backend/fsdp/sharded_model.h"
#include "backend/fsdp/sharded_optim_state.h"
#include "backend/model/flamingo.h"
#include "backend/step/grad_scaler.h"
#include "backend/step/optimizer.h"
#include "backend/step/schedule.h"

namespace fs::checkpoint {

// Where training stands.
struct TrainCounters {
  int64_t epoch = 0;        // current epoch
  int64_t iteration = 0;    // iterations (micro-steps) done over the run
  int64_t step = 0;         // optimizer steps done over the run
  int64_t stepInEpoch = 0;  // iterations done in the current epoch
};

struct TrainerState {
  model::Flamingo model{nullptr};
  std::vector<step::NamedParameter> trainable;    // the model's trainable parameters, model order
  std::unique_ptr<step::GroupedAdamW> optimizer;  // over `shards` under FSDP, else over `trainable`
  std::unique_ptr<step::LrSchedule> schedule;
  std::unique_ptr<step::GradScaler> scaler;     // loss scaling (fp16 precisions); null otherwise
  std::unique_ptr<data::DataSource> source;     // the training stream
  std::shared_ptr<fsdp::ShardedModel> sharded;  // FSDP, once sharded
  std::vector<fsdp::ShardParameter> shards;     // FSDP: what `optimizer` steps
  TrainCounters counters;
};

}  // namespace fs::checkpoint
