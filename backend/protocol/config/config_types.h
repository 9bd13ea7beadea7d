// The run configuration as plain structs, one per component.
//
// NOTE [One declaration]: the members below carry no defaults. Every field's
// key, default, unit, help text and allowed values are declared once, in
// config_schema.cpp; defaultRunConfig() applies them, and YAML I/O, `--set`
// overrides, validation, the OpenFlamingo command-line mapping and the GUI
// form are all derived from that declaration. To add a field: add the member
// here, declare it in config_schema.cpp, refresh the golden defaults file
// (docs/adding-a-config-field.md).
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fs::protocol {

struct VisionConfig {
  std::string path;        // OpenCLIP architecture name, e.g. ViT-L-14 (--vision_encoder_path)
  std::string pretrained;  // OpenCLIP weights tag or a checkpoint file (--vision_encoder_pretrained)
  int64_t image_size{};
  int64_t patch_size{};
  int64_t width{};
  int64_t layers{};
  int64_t heads{};
  double mlp_ratio{};
  int64_t output_dim{};
  bool quick_gelu{};
  bool ln_post_on_tokens{};
  bool operator==(const VisionConfig&) const = default;
};

struct PerceiverConfig {
  int64_t depth{};
  int64_t heads{};
  int64_t head_dim{};
  int64_t num_latents{};
  int64_t ff_mult{};
  bool operator==(const PerceiverConfig&) const = default;
};

struct CrossAttnConfig {
  int64_t every_n_layers{};
  int64_t heads{};
  int64_t head_dim{};
  int64_t ff_mult{};
  bool operator==(const CrossAttnConfig&) const = default;
};

struct LmConfig {
  std::string path;            // Hugging Face id or local directory (--lm_path)
  std::string tokenizer_path;  // (--tokenizer_path)
  std::string family;          // opt | mpt | gpt_neox | llama
  int64_t vocab_size{};
  int64_t width{};
  int64_t layers{};
  int64_t heads{};
  int64_t ffn_dim{};
  int64_t max_positions{};
  bool tied_head{};
  bool operator==(const LmConfig&) const = default;
};

// Token ids for a model without a tokenizer file (tiny / synthetic runs).
struct TokensConfig {
  int64_t vocab_size{};
  int64_t eos_id{};
  int64_t pad_id{};
  int64_t image_id{};
  int64_t endofchunk_id{};
  bool operator==(const TokensConfig&) const = default;
};

struct ModelConfig {
  std::string preset;  // informational: the preset this model came from
  VisionConfig vision;
  PerceiverConfig perceiver;
  CrossAttnConfig cross_attn;
  LmConfig lm;
  TokensConfig tokens;
  bool freeze_lm_embeddings{};
  bool gradient_checkpointing{};
  bool operator==(const ModelConfig&) const = default;
};

struct DatasetConfig {
  std::string name;
  std::string type;  // laion | mmc4
  std::string shards;
  int64_t batch_size{};
  int64_t samples_per_epoch{};
  double loss_multiplier{};
  int64_t workers{};
  int64_t total_samples{};  // samples in the shards, 0 = unknown (for "passes over the data")
  int64_t max_tokens{};
  // mmc4 only
  double textsim_threshold{};
  int64_t max_num_images{};
  int64_t min_num_images{};
  std::string val_shards;  // held-out shards, "" = no validation for this dataset
  bool operator==(const DatasetConfig&) const = default;
};

struct DataConfig {
  std::string source;  // shards | synthetic
  bool resampled{};
  int64_t shuffle_buffer{};
  int64_t prefetch_batches{};  // per data worker, queued ahead of the step
  double max_drop_rate_pct{};
  int64_t stall_timeout_s{};  // a data worker delivering nothing this long fails the run
  int64_t val_every_steps{};  // 0 = never
  int64_t val_batches{};      // per dataset per evaluation
  std::vector<DatasetConfig> datasets;
  bool operator==(const DataConfig&) const = default;
};

struct OptimConfig {
  int64_t epochs{};
  double lr{};
  std::string scheduler;  // constant | linear | cosine
  int64_t warmup_steps{};
  double weight_decay{};
  double beta1{};
  double beta2{};
  double eps{};
  int64_t grad_accum_steps{};
  double max_grad_norm{};
  std::string clip_mode;  // global | per_unit
  std::string precision;  // fp32 | bf16 | fp16 | amp_bf16 | amp_fp16
  bool operator==(const OptimConfig&) const = default;
};

struct MixedPrecisionConfig {
  std::string param_dtype;  // auto | fp32 | bf16 | fp16
  std::string reduce_dtype;
  std::string buffer_dtype;
  bool operator==(const MixedPrecisionConfig&) const = default;
};

struct ParallelConfig {
  std::string device;             // auto | cpu | cuda: where each rank trains (NOTE [Device choice])
  std::string mode;               // ddp | fsdp  (--fsdp)
  std::string dist_url;           // --dist-url
  std::string dist_backend;       // auto | nccl | gloo  (--dist-backend)
  std::string sharding_strategy;  // full_shard | shard_grad_op | hybrid_shard | no_shard
  bool use_orig_params{};         // true only (NOTE [Original parameters] in validate.cpp)
  std::string wrap_policy;        // openflamingo | transformer_layer | size_based | custom
  int64_t wrap_min_params{};
  std::vector<std::string> wrap_patterns;
  bool forward_prefetch{};
  std::string backward_prefetch;  // pre | post | none
  int64_t limit_all_gathers{};    // max units gathered at once, 0 = unlimited
  bool cpu_offload{};
  bool sync_module_states{};
  bool delayed_init{};  // FSDP: only each node's first rank builds weights; shards are scattered from it
  MixedPrecisionConfig mixed_precision;
  int64_t collective_timeout_s{};
  int64_t preflight_timeout_s{};
  std::string intra_node_transport;  // shm | gloo: how ranks of one node exchange over Gloo
  int64_t shm_arena_mib{};
  bool shared_shards{};  // FSDP over shared memory: shards in one node-shared segment, gathers copy without a
                         // collective
  bool operator==(const ParallelConfig&) const = default;
};

struct CheckpointConfig {
  std::string resume_from;  // --resume_from_checkpoint
  bool delete_previous{};
  int64_t every_steps{};
  int64_t keep_last{};
  std::string format;  // full | sharded (NOTE [Sharded checkpoints], backend/checkpoint/checkpoint_sharded.h)
  bool operator==(const CheckpointConfig&) const = default;
};

// The loss-spike guard (NOTE [Loss-spike guard] in backend/trainer/loss_spike_guard.h).
struct GuardConfig {
  bool enabled{};
  int64_t window{};           // steps of loss history per dataset
  std::string rule;           // mad | ema
  double threshold{};         // mad: robust z-score limit; ema: ratio to the EMA
  double ema_beta{};          // ema: the EMA's decay per step
  int64_t skip_batches{};     // batches skipped past the spike's
  double lr_factor{};         // 0 < f <= 1, applied after a rollback
  int64_t lr_factor_steps{};  // for this many optimizer steps
  int64_t max_rollbacks{};    // one more spike stops the run
  bool operator==(const GuardConfig&) const = default;
};

struct TelemetryConfig {
  int64_t logging_steps{};   // --logging_steps: progress line / log file
  int64_t interval_steps{};  // step events in events.jsonl
  int64_t memory_every_steps{};
  double heartbeat_s{};
  int64_t queue_capacity{};
  bool operator==(const TelemetryConfig&) const = default;
};

struct SlurmConfig {
  std::string partition;
  std::string account;
  std::string time_limit;
  int64_t gpus_per_node{};
  int64_t cpus_per_task{};
  std::vector<std::string> extra_args;
  bool operator==(const SlurmConfig&) const = default;
};

struct LaunchConfig {
  std::string kind;  // local | external | ssh | slurm
  int64_t nnodes{};
  int64_t nproc_per_node{};
  int64_t threads_per_rank{};
  std::vector<std::string> hosts;  // [user@]host[:port] per node, node 0 first
  std::string master_addr;
  int64_t master_port{};
  std::string remote_workdir;
  // NAME -> VALUE set for every rank on every node (NOTE [Launch environment], launch_env.h)
  std::map<std::string, std::string> env;
  int64_t max_restarts{};  // torchrun --max-restarts (local and ssh; NOTE [Restarts], node_agent.h)
  SlurmConfig slurm;
  bool operator==(const LaunchConfig&) const = default;
};

struct RunConfig {
  std::string schema_version;
  std::string name;      // --run_name
  std::string run_root;  // where run directories are created
  int64_t seed{};
  std::string compat;  // default | openflamingo
  ModelConfig model;
  DataConfig data;
  OptimConfig optim;
  ParallelConfig parallel;
  CheckpointConfig checkpoint;
  GuardConfig guard;
  TelemetryConfig telemetry;
  LaunchConfig launch;
  bool operator==(const RunConfig&) const = default;

  int64_t worldSize() const { return launch.nnodes * launch.nproc_per_node; }
};

// The schema's defaults: OpenFlamingo train.py's defaults where it has the
// option, ours elsewhere.
RunConfig defaultRunConfig();
// A dataset entry with every field at its default, given name and type.
DatasetConfig defaultDataset(const std::string& name, const std::string& type);

inline constexpr const char* kConfigSchemaVersion = "1.0";

}  // namespace fs::protocol
