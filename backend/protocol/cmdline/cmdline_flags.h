// The flag tables behind OpenFlamingo command-line import and export
// (cmdline.h): private to backend/protocol, shared by reader and writer.
//
// NOTE [train.py flags]: one row per option of OpenFlamingo v2.0.x train.py,
// in the order export writes them, plus the older names import also accepts
// and the options that have no effect here. Import and export both read this
// table; docs/openflamingo-cmdline.md is its prose form (keep them together).
//
// Thread-safety: immutable tables.
#pragma once

#include <string_view>
#include <vector>

namespace fs::protocol::cmdline_detail {

enum class Slot { kNone, kLaion, kMmc4 };
// How a flag's text becomes the field's value (and back, on export).
enum class Conv {
  kPlain,       // the field's own type
  kPrecision,   // amp_bfloat16 = amp_bf16; amp_fp16 is not train.py's
  kScheduler,   // unknown names fall back to constant, as in train.py
  kSharding,    // full | hybrid  <->  full_shard | hybrid_shard
  kBackend,     // nccl | gloo; our "auto" is the absent flag
  kFsdpMode,    // --fsdp  <->  parallel.mode = fsdp
  kOrigParams,  // written with --fsdp; absent under --fsdp: a warning (NOTE [Original parameters])
  kShards,      // "s3..." becomes "pipe:aws s3 cp '<part>' -" per "::" part (train.py: unquoted)
  kTokenizer,   // an empty value means --lm_path's tokenizer, as in train.py
  kWorkers      // one value for every dataset
};

struct TrainFlag {
  std::string_view name;
  bool takesValue = true;
  std::string_view target;  // config path; a dataset key when slot != kNone; "" = ignored
  Slot slot = Slot::kNone;
  Conv conv = Conv::kPlain;
  bool exported = true;  // false: accepted on import only (older names, other versions)
};

inline TrainFlag valueFlag(std::string_view name, std::string_view path, Conv conv = Conv::kPlain) {
  return {name, true, path, Slot::kNone, conv, true};
}
inline TrainFlag switchFlag(std::string_view name, std::string_view path, Conv conv = Conv::kPlain) {
  return {name, false, path, Slot::kNone, conv, true};
}
inline TrainFlag datasetFlag(std::string_view name, Slot slot, std::string_view key,
                             Conv conv = Conv::kPlain) {
  return {name, true, key, slot, conv, true};
}
inline TrainFlag ignoredFlag(std::string_view name, bool takesValue = false) {
  return {name, takesValue, "", Slot::kNone};
}
inline TrainFlag importOnly(TrainFlag f) {
  f.exported = false;
  return f;
}

inline const std::vector<TrainFlag>& trainFlags() {
  static const std::vector<TrainFlag> flags = {
      valueFlag("--vision_encoder_path", "model.vision.path"),
      valueFlag("--vision_encoder_pretrained", "model.vision.pretrained"),
      valueFlag("--lm_path", "model.lm.path"),
      valueFlag("--tokenizer_path", "model.lm.tokenizer_path", Conv::kTokenizer),
      valueFlag("--cross_attn_every_n_layers", "model.cross_attn.every_n_layers"),
      switchFlag("--freeze_lm_embeddings", "model.freeze_lm_embeddings"),
      switchFlag("--gradient_checkpointing", "model.gradient_checkpointing"),
      switchFlag("--dataset_resampled", "data.resampled"),
      valueFlag("--workers", "workers", Conv::kWorkers),
      datasetFlag("--laion_shards", Slot::kLaion, "shards", Conv::kShards),
      datasetFlag("--batch_size_laion", Slot::kLaion, "batch_size"),
      datasetFlag("--train_num_samples_laion", Slot::kLaion, "samples_per_epoch"),
      datasetFlag("--loss_multiplier_laion", Slot::kLaion, "loss_multiplier"),
      datasetFlag("--mmc4_shards", Slot::kMmc4, "shards", Conv::kShards),
      datasetFlag("--batch_size_mmc4", Slot::kMmc4, "batch_size"),
      datasetFlag("--train_num_samples_mmc4", Slot::kMmc4, "samples_per_epoch"),
      datasetFlag("--loss_multiplier_mmc4", Slot::kMmc4, "loss_multiplier"),
      datasetFlag("--mmc4_textsim_threshold", Slot::kMmc4, "textsim_threshold"),
      datasetFlag("--mmc4_max_num_images", Slot::kMmc4, "max_num_images"),
      datasetFlag("--mmc4_min_num_images", Slot::kMmc4, "min_num_images"),
      valueFlag("--run_name", "name"),
      valueFlag("--resume_from_checkpoint", "checkpoint.resume_from"),
      switchFlag("--delete_previous_checkpoint", "checkpoint.delete_previous"),
      valueFlag("--seed", "seed"),
      valueFlag("--num_epochs", "optim.epochs"),
      valueFlag("--learning_rate", "optim.lr"),
      valueFlag("--lr_scheduler", "optim.scheduler", Conv::kScheduler),
      valueFlag("--warmup_steps", "optim.warmup_steps"),
      valueFlag("--weight_decay", "optim.weight_decay"),
      valueFlag("--gradient_accumulation_steps", "optim.grad_accum_steps"),
      valueFlag("--precision", "optim.precision", Conv::kPrecision),
      valueFlag("--logging_steps", "telemetry.logging_steps"),
      valueFlag("--dist-url", "parallel.dist_url"),
      valueFlag("--dist-backend", "parallel.dist_backend", Conv::kBackend),
      switchFlag("--fsdp", "parallel.mode", Conv::kFsdpMode),
      switchFlag("--fsdp_use_orig_params", "parallel.use_orig_params", Conv::kOrigParams),
      valueFlag("--fsdp_sharding_strategy", "parallel.sharding_strategy", Conv::kSharding),
      // Pre-2.0 versions: FSDP CPU offload, and MMC4 called "c4".
      importOnly(switchFlag("--fsdp_cpu_offload", "parallel.cpu_offload")),
      importOnly(datasetFlag("--c4_shards", Slot::kMmc4, "shards", Conv::kShards)),
      importOnly(datasetFlag("--batch_size_c4", Slot::kMmc4, "batch_size")),
      importOnly(datasetFlag("--train_num_samples_c4", Slot::kMmc4, "samples_per_epoch")),
      importOnly(datasetFlag("--loss_multiplier_c4", Slot::kMmc4, "loss_multiplier")),
      importOnly(datasetFlag("--c4_textsim_threshold", Slot::kMmc4, "textsim_threshold")),
      // Known, but no effect on a Flamingo Studio run.
      ignoredFlag("--offline"),
      ignoredFlag("--horovod"),
      ignoredFlag("--no-set-device-rank"),
      ignoredFlag("--report_to_wandb"),
      ignoredFlag("--wandb_project", true),
      ignoredFlag("--wandb_entity", true),
      ignoredFlag("--save_checkpoints_to_wandb"),
      ignoredFlag("--use_media_placement_augmentation"),
  };
  return flags;
}

inline const char* slotName(Slot s) {
  return s == Slot::kLaion ? "laion" : "mmc4";
}

// ------------------------------------------------------------------ launchers

struct LauncherOpt {
  std::string_view names;  // alternatives separated by '|'
  bool takesValue;
  std::string_view target;  // config path, a special marker ("@..."), or "" = ignored
};

// torchrun / torch.distributed.run|launch; names with '_' (dashes normalised).
inline const std::vector<LauncherOpt>& torchrunOpts() {
  static const std::vector<LauncherOpt> opts = {
      {"--nnodes", true, "@nnodes"},
      {"--nproc_per_node", true, "@nproc"},
      {"--master_addr", true, "launch.master_addr"},
      {"--master_port", true, "launch.master_port"},
      {"--rdzv_endpoint", true, "@endpoint"},
      {"--node_rank|--rdzv_backend|--rdzv_id|--rdzv_conf|--max_restarts|--monitor_interval|--start_method|--"
       "role|"
       "--log_dir|-r|--redirects|-t|--tee|--local_addr|--logs_specs|--local_ranks_filter",
       true, ""},
      {"--standalone|--no_python|-m|--module|--run_path|--use_env", false, ""},
  };
  return opts;
}

inline const std::vector<LauncherOpt>& srunOpts() {
  static const std::vector<LauncherOpt> opts = {
      {"-N|--nodes", true, "@nodes"},
      {"-n|--ntasks", true, "@ntasks"},
      {"--ntasks-per-node|--tasks-per-node", true, "@tasks_per_node"},
      {"--gpus-per-node", true, "launch.slurm.gpus_per_node"},
      {"-p|--partition", true, "launch.slurm.partition"},
      {"-A|--account", true, "launch.slurm.account"},
      {"-t|--time", true, "launch.slurm.time_limit"},
      {"-c|--cpus-per-task", true, "launch.slurm.cpus_per_task"},
      {"-J|--job-name|-o|--output|-e|--error|-i|--input|-w|--nodelist|-x|--exclude|-C|--constraint|-q|--qos|"
       "-D|--chdir|-m|--distribution|-G|--gpus|--gpus-per-task|--gres|--mem|--mem-per-cpu|--mem-per-gpu|"
       "--cpu-bind|--cpu_bind|--accel-bind|--mpi|--export|--reservation|--gpu-bind|--hint|--ntasks-per-gpu|"
       "--cpus-per-gpu|--signal|--comment|--container-image|--container-mounts|--begin|-d|--dependency|"
       "--network|--wckey|-L|--licenses|-M|--clusters|--jobid|--open-mode|--time-min|--nice|"
       "--sockets-per-node|--cores-per-socket|--threads-per-core|--ntasks-per-core|--ntasks-per-socket",
       true, ""},
      {"-l|--label|-u|--unbuffered|-v|--verbose|-Q|--quiet|-X|--disable-status|-K|--kill-on-bad-exit|"
       "--exclusive|--overlap|--exact|--pty|-O|--overcommit|-s|--oversubscribe|-k|--no-kill|-Z|--no-allocate|"
       "--multi-prog|--spread-job|--propagate",
       false, ""},
  };
  return opts;
}

inline const std::vector<LauncherOpt>& pythonOpts() {
  static const std::vector<LauncherOpt> opts = {
      {"-W|-X", true, ""},
      {"-u|-O|-OO|-B|-E|-s|-S|-I|-b|-bb|-d|-q|-v|-x|-P", false, ""},
  };
  return opts;
}

inline const LauncherOpt* findOpt(const std::vector<LauncherOpt>& opts, std::string_view name) {
  for (const auto& o : opts) {
    std::string_view names = o.names;
    while (!names.empty()) {
      const auto bar = names.find('|');
      if (names.substr(0, bar) == name) return &o;
      names = bar == std::string_view::npos ? std::string_view() : names.substr(bar + 1);
    }
  }
  return nullptr;
}

}  // namespace fs::protocol::cmdline_detail
