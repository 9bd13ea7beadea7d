// NOTE [One declaration] (see config_types.h): every run-config field is
// declared here once — key, default, unit, help, allowed values. Defaults
// follow OpenFlamingo's train.py where it has the option (its flag is named
// in the help text); the rest are ours. A change here changes the golden file
// tests/assets/golden/default_config.yaml: review both together.
#include "backend/protocol/config/config_types.h"
#include "backend/protocol/config/schema_builder.h"

namespace fs::protocol {
namespace {

using detail::SectionBuilder;

struct Schema {
  SectionSpec vision, perceiver, crossAttn, lm, tokens, model;
  SectionSpec dataset, data, optim, mixedPrecision, parallel, checkpoint, guard, telemetry, slurm, launch,
      root;

  Schema() {
    declareModel();
    declareData();
    declareOptim();
    declareParallel();
    declareRunAndLaunch();
  }

  void declareModel() {
    {
      SectionBuilder<VisionConfig> b(vision, "vision", "Frozen OpenCLIP ViT vision tower");
      b.field(&VisionConfig::path, "path", "ViT-L-14", "OpenCLIP architecture name (--vision_encoder_path)")
          .required();
      b.field(&VisionConfig::pretrained, "pretrained", "openai",
              "OpenCLIP weights tag or checkpoint file; empty = random init (--vision_encoder_pretrained)");
      b.field(&VisionConfig::image_size, "image_size", 224, "Input image side").unit("px").range(16, 4096);
      b.field(&VisionConfig::patch_size, "patch_size", 14, "Patch side of the patch convolution")
          .unit("px")
          .range(1, 1024);
      b.field(&VisionConfig::width, "width", 1024, "Residual stream width (d_vis)").range(8, 65536);
      b.field(&VisionConfig::layers, "layers", 24, "Residual attention blocks").range(1, 256);
      b.field(&VisionConfig::heads, "heads", 16, "Attention heads per block").range(1, 1024);
      b.field(&VisionConfig::mlp_ratio, "mlp_ratio", 4.0, "MLP hidden width / width").range(0.25, 64);
      b.field(&VisionConfig::output_dim, "output_dim", 768,
              "Width of the CLIP projection (unused for media features)")
          .range(1, 65536);
      b.field(&VisionConfig::quick_gelu, "quick_gelu", true,
              "QuickGELU x*sigmoid(1.702x) as in OpenAI weights");
      b.field(&VisionConfig::ln_post_on_tokens, "ln_post_on_tokens", false,
              "Apply ln_post to the patch tokens (open_clip >= 2.23); released models did not");
    }
    {
      SectionBuilder<PerceiverConfig> b(perceiver, "perceiver", "Trainable Perceiver resampler");
      b.field(&PerceiverConfig::depth, "depth", 6, "Attention + feed-forward layers").range(1, 64);
      b.field(&PerceiverConfig::heads, "heads", 8, "Attention heads").range(1, 256);
      b.field(&PerceiverConfig::head_dim, "head_dim", 64, "Width of each head").range(1, 1024);
      b.field(&PerceiverConfig::num_latents, "num_latents", 64,
              "Learned latent queries = visual tokens per image")
          .range(1, 4096);
      b.field(&PerceiverConfig::ff_mult, "ff_mult", 4, "Feed-forward hidden width / width").range(1, 64);
    }
    {
      SectionBuilder<CrossAttnConfig> b(crossAttn, "cross_attn", "Trainable gated cross-attention blocks");
      b.field(&CrossAttnConfig::every_n_layers, "every_n_layers", 1,
              "A block before decoder layer i when (i+1) % n == 0 (--cross_attn_every_n_layers)")
          .range(1, 1024);
      b.field(&CrossAttnConfig::heads, "heads", 8, "Attention heads").range(1, 256);
      b.field(&CrossAttnConfig::head_dim, "head_dim", 64, "Width of each head").range(1, 1024);
      b.field(&CrossAttnConfig::ff_mult, "ff_mult", 4, "Feed-forward hidden width / LM width").range(1, 64);
    }
    {
      SectionBuilder<LmConfig> b(lm, "lm", "Frozen causal language model");
      b.field(&LmConfig::path, "path", "facebook/opt-1.3b",
              "Hugging Face id or local checkpoint directory; empty = random init (--lm_path)");
      b.field(&LmConfig::tokenizer_path, "tokenizer_path", "facebook/opt-30b",
              "Tokenizer id or directory; empty = use model.tokens (--tokenizer_path)");
      b.field(&LmConfig::family, "family", "opt", "Decoder family")
          .choices({"opt", "mpt", "gpt_neox", "llama"});
      b.field(&LmConfig::vocab_size, "vocab_size", 50272, "Rows of the input embedding before new tokens")
          .range(4, 1 << 24);
      b.field(&LmConfig::width, "width", 2048, "Hidden size (d_model)").range(8, 65536);
      b.field(&LmConfig::layers, "layers", 24, "Decoder layers").range(1, 1024);
      b.field(&LmConfig::heads, "heads", 32, "Attention heads").range(1, 1024);
      b.field(&LmConfig::ffn_dim, "ffn_dim", 8192, "Feed-forward hidden width").range(1, 1 << 20);
      b.field(&LmConfig::max_positions, "max_positions", 2048, "Longest sequence")
          .unit("tokens")
          .range(8, 1 << 20);
      b.field(&LmConfig::tied_head, "tied_head", true, "Output head shares the input embedding");
    }
    {
      SectionBuilder<TokensConfig> b(tokens, "tokens",
                                     "Token ids when there is no tokenizer file (tiny and synthetic runs)");
      b.field(&TokensConfig::vocab_size, "vocab_size", 50267, "Tokenizer length incl. the added tokens")
          .range(4, 1 << 24);
      b.field(&TokensConfig::eos_id, "eos_id", 2, "End-of-sequence id").min(0);
      b.field(&TokensConfig::pad_id, "pad_id", 1, "Padding id").min(0);
      b.field(&TokensConfig::image_id, "image_id", 50266, "Id of <image>").min(0);
      b.field(&TokensConfig::endofchunk_id, "endofchunk_id", 50265, "Id of <|endofchunk|>").min(0);
    }
    SectionBuilder<ModelConfig> b(model, "model",
                                  "Flamingo model: vision tower, resampler, cross-attention, LM");
    b.field(&ModelConfig::preset, "preset", "", "Name of the preset this model came from (informational)");
    b.section(&ModelConfig::vision, vision);
    b.section(&ModelConfig::perceiver, perceiver);
    b.section(&ModelConfig::cross_attn, crossAttn);
    b.section(&ModelConfig::lm, lm);
    b.section(&ModelConfig::tokens, tokens);
    b.field(&ModelConfig::freeze_lm_embeddings, "freeze_lm_embeddings", false,
            "Keep <image> and <|endofchunk|> embedding rows frozen too (--freeze_lm_embeddings)");
    b.field(&ModelConfig::gradient_checkpointing, "gradient_checkpointing", false,
            "Recompute decoder and cross-attention activations in backward (--gradient_checkpointing)");
  }

  void declareData() {
    {
      SectionBuilder<DatasetConfig> b(dataset, "dataset", "One training dataset");
      b.field(&DatasetConfig::name, "name", "", "Unique name, used in telemetry and --set paths").required();
      b.field(&DatasetConfig::type, "type", "laion", "laion: image-text pairs; mmc4: interleaved documents")
          .choices({"laion", "mmc4"});
      b.field(
          &DatasetConfig::shards, "shards", "",
          "Shard list: brace patterns joined with '::', or pipe:<command> (--laion_shards / --mmc4_shards)");
      b.field(&DatasetConfig::batch_size, "batch_size", 128, "Per-rank batch (--batch_size_<name>)")
          .unit("samples")
          .range(1, 1 << 20);
      b.field(&DatasetConfig::samples_per_epoch, "samples_per_epoch", 10000,
              "Samples in one 'epoch' of this dataset (--train_num_samples_<name>)")
          .unit("samples")
          .min(1);
      b.field(&DatasetConfig::loss_multiplier, "loss_multiplier", 1.0,
              "Weight of this loss (--loss_multiplier_<name>)")
          .range(0, 1e6);
      b.field(&DatasetConfig::workers, "workers", 1, "Decoding workers per rank (--workers)").range(1, 256);
      b.field(&DatasetConfig::total_samples, "total_samples", 0,
              "Samples in the shards, 0 = unknown; used to report passes over the data")
          .unit("samples")
          .min(0);
      b.field(&DatasetConfig::max_tokens, "max_tokens", 0,
              "Text tokens per sample, 0 = type default (laion 32, mmc4 256)")
          .unit("tokens")
          .range(0, 1 << 20);
      b.field(&DatasetConfig::textsim_threshold, "textsim_threshold", 30.0,
              "Drop image-sentence pairs below this CLIP similarity (--mmc4_textsim_threshold)")
          .range(-1, 100)
          .when("type=mmc4");
      b.field(&DatasetConfig::max_num_images, "max_num_images", 6,
              "Images kept per document (--mmc4_max_num_images)")
          .range(1, 1024)
          .when("type=mmc4");
      b.field(&DatasetConfig::min_num_images, "min_num_images", 1,
              "Reject documents with fewer <image> tokens (--mmc4_min_num_images)")
          .range(0, 1024)
          .when("type=mmc4");
      b.field(&DatasetConfig::val_shards, "val_shards", "",
              "Held-out shards for validation (same syntax as shards); empty = not validated");
    }
    SectionBuilder<DataConfig> b(data, "data", "Training data");
    b.field(&DataConfig::source, "source", "shards",
            "shards: WebDataset tar files; generated: real shards of generated pictures written into the run "
            "directory (with their tokenizer); synthetic: random batches in memory")
        .choices({"shards", "generated", "synthetic"});
    b.field(&DataConfig::resampled, "resampled", false, "Draw shards with replacement (--dataset_resampled)");
    b.field(&DataConfig::shuffle_buffer, "shuffle_buffer", 5000, "Sample shuffle buffer")
        .unit("samples")
        .range(1, 1 << 24);
    b.field(&DataConfig::prefetch_batches, "prefetch_batches", 2,
            "Batches each data worker prepares ahead of the step (PyTorch's prefetch_factor); each one "
            "holds a batch's memory")
        .unit("batches")
        .range(1, 64);
    b.field(&DataConfig::max_drop_rate_pct, "max_drop_rate_pct", 1.0,
            "Stop the run when more than this share of samples is dropped as bad")
        .unit("%")
        .range(0, 100);
    b.field(&DataConfig::stall_timeout_s, "stall_timeout_s", 300,
            "Fail the run when a data worker delivers nothing this long while the step waits for it "
            "(names the dataset, shard and command)")
        .unit("s")
        .range(1, 7 * 24 * 3600);
    b.field(&DataConfig::val_every_steps, "val_every_steps", 0,
            "Validate on each dataset's val_shards every this many optimizer steps, 0 = never")
        .unit("steps")
        .min(0);
    b.field(&DataConfig::val_batches, "val_batches", 8, "Batches per dataset in one validation")
        .unit("batches")
        .range(1, 1 << 20);
    b.list(&DataConfig::datasets, dataset, "datasets",
           "Datasets trained on together, one batch of each per step",
           {{{"name", Value(std::string("laion"))}, {"type", Value(std::string("laion"))}},
            {{"name", Value(std::string("mmc4"))}, {"type", Value(std::string("mmc4"))}}});
  }

  void declareOptim() {
    SectionBuilder<OptimConfig> b(optim, "optim", "Optimisation");
    b.field(&OptimConfig::epochs, "epochs", 1, "Epochs of samples_per_epoch samples each (--num_epochs)")
        .range(1, 1 << 24);
    b.field(&OptimConfig::lr, "lr", 1e-4, "Peak learning rate (--learning_rate)").range(0, 10);
    b.field(&OptimConfig::scheduler, "scheduler", "constant", "Schedule after warmup (--lr_scheduler)")
        .choices({"constant", "linear", "cosine"});
    b.field(&OptimConfig::warmup_steps, "warmup_steps", 5000, "Linear warmup (--warmup_steps)")
        .unit("steps")
        .min(0);
    b.field(&OptimConfig::weight_decay, "weight_decay", 0.1,
            "AdamW decay on gated cross-attention parameters (--weight_decay)")
        .range(0, 10);
    b.field(&OptimConfig::beta1, "beta1", 0.9, "AdamW beta1").range(0, 0.999999);
    b.field(&OptimConfig::beta2, "beta2", 0.999, "AdamW beta2").range(0, 0.999999999);
    b.field(&OptimConfig::eps, "eps", 1e-8, "AdamW epsilon").range(0, 1);
    b.field(&OptimConfig::grad_accum_steps, "grad_accum_steps", 1,
            "Micro-steps per optimizer step (--gradient_accumulation_steps)")
        .range(1, 1 << 16);
    b.field(&OptimConfig::max_grad_norm, "max_grad_norm", 1.0, "Gradient clipping max norm, 0 = off")
        .range(0, 1e9);
    b.field(&OptimConfig::clip_mode, "clip_mode", "global",
            "global: one norm over all shards; per_unit: each FSDP unit alone (the reference)")
        .choices({"global", "per_unit"});
    b.field(&OptimConfig::precision, "precision", "fp32", "Numeric precision (--precision)")
        .choices({"fp32", "bf16", "fp16", "amp_bf16", "amp_fp16"});
  }

  void declareParallel() {
    {
      SectionBuilder<MixedPrecisionConfig> b(
          mixedPrecision, "mixed_precision",
          "FSDP mixed precision; auto: the dtype optim.precision computes in");
      const std::vector<std::string> dtypes = {"auto", "fp32", "bf16", "fp16"};
      b.field(&MixedPrecisionConfig::param_dtype, "param_dtype", "auto", "Dtype of gathered parameters")
          .choices(dtypes);
      b.field(&MixedPrecisionConfig::reduce_dtype, "reduce_dtype", "auto", "Dtype of gradient reduction")
          .choices(dtypes);
      b.field(&MixedPrecisionConfig::buffer_dtype, "buffer_dtype", "auto", "Dtype of buffers")
          .choices(dtypes);
    }
    SectionBuilder<ParallelConfig> b(parallel, "parallel", "Data parallelism and sharding");
    b.field(&ParallelConfig::device, "device", "auto",
            "Where each rank trains: auto = cuda:<local rank> when CUDA is available, else cpu; cuda fails "
            "without a GPU for every local rank (train.py: always CUDA)")
        .choices({"auto", "cpu", "cuda"});
    b.field(&ParallelConfig::mode, "mode", "ddp", "ddp: replicate; fsdp: shard (--fsdp)")
        .choices({"ddp", "fsdp"});
    b.field(&ParallelConfig::dist_url, "dist_url", "env://", "Rendezvous URL (--dist-url)").required();
    b.field(&ParallelConfig::dist_backend, "dist_backend", "auto",
            "Collective backend for gradients and parameters; auto = nccl on CUDA, else gloo; host tensors "
            "always use gloo (--dist-backend)")
        .choices({"auto", "nccl", "gloo"});
    b.field(&ParallelConfig::sharding_strategy, "sharding_strategy", "full_shard",
            "FSDP strategy (--fsdp_sharding_strategy full|hybrid)")
        .choices({"full_shard", "shard_grad_op", "hybrid_shard", "no_shard"});
    b.field(
        &ParallelConfig::use_orig_params, "use_orig_params", true,
        "Optimizer over the original parameters: per-parameter weight decay and the embedding row mask, as "
        "train.py with --fsdp_use_orig_params; the engine always does this, false is refused");
    b.field(&ParallelConfig::wrap_policy, "wrap_policy", "openflamingo",
            "How modules are grouped into FSDP units")
        .choices({"openflamingo", "transformer_layer", "size_based", "custom"});
    b.field(&ParallelConfig::wrap_min_params, "wrap_min_params", 100000000,
            "size_based: minimum parameters per unit")
        .unit("params")
        .min(1);
    b.field(&ParallelConfig::wrap_patterns, "wrap_patterns", std::vector<std::string>{},
            "custom: module-path patterns, one unit per match ('*' matches one path component)");
    b.field(&ParallelConfig::forward_prefetch, "forward_prefetch", true,
            "Gather the next unit during forward");
    b.field(&ParallelConfig::backward_prefetch, "backward_prefetch", "pre",
            "When to gather the next unit in backward")
        .choices({"pre", "post", "none"});
    b.field(&ParallelConfig::limit_all_gathers, "limit_all_gathers", 2,
            "Units gathered at once, 0 = unlimited")
        .unit("units")
        .range(0, 1 << 16);
    b.field(&ParallelConfig::cpu_offload, "cpu_offload", false,
            "Keep parameter shards on the CPU between uses");
    b.field(&ParallelConfig::sync_module_states, "sync_module_states", true,
            "Broadcast rank 0's weights at start");
    b.field(
        &ParallelConfig::delayed_init, "delayed_init", true,
        "FSDP: one rank per node builds the weights; the others receive their shards, one unit at a time");
    b.section(&ParallelConfig::mixed_precision, mixedPrecision);
    b.field(&ParallelConfig::collective_timeout_s, "collective_timeout_s", 600,
            "A collective not finished in this time fails the run, naming the rank")
        .unit("s")
        .range(1, 86400);
    b.field(&ParallelConfig::preflight_timeout_s, "preflight_timeout_s", 120,
            "Every rank must join the pre-flight check within this time")
        .unit("s")
        .range(1, 86400);
    b.field(&ParallelConfig::intra_node_transport, "intra_node_transport", "shm",
            "Gloo: ranks of one node exchange through shared memory (shm) or TCP only (gloo)")
        .choices({"shm", "gloo"});
    b.field(&ParallelConfig::shm_arena_mib, "shm_arena_mib", 64,
            "Shared memory per rank; larger messages travel over TCP")
        .unit("MiB")
        .range(1, 65536);
    b.field(&ParallelConfig::shared_shards, "shared_shards", true,
            "FSDP over shared memory: a node's shards in one segment; gathers copy them without waiting for "
            "peers");
  }

  void declareRunAndLaunch() {
    {
      SectionBuilder<CheckpointConfig> b(checkpoint, "checkpoint", "Checkpoints and resume");
      b.field(&CheckpointConfig::resume_from, "resume_from", "",
              "Checkpoint to resume from; empty = newest in the run directory (--resume_from_checkpoint)");
      b.field(
          &CheckpointConfig::delete_previous, "delete_previous", false,
          "Delete the previous epoch checkpoint once the new one is durable (--delete_previous_checkpoint)");
      b.field(&CheckpointConfig::every_steps, "every_steps", 1000,
              "Step checkpoint (with RNG and data position) interval, 0 = epoch checkpoints only")
          .unit("steps")
          .min(0);
      b.field(&CheckpointConfig::keep_last, "keep_last", 2, "Step checkpoints kept").range(1, 1000);
      b.field(&CheckpointConfig::format, "format", "full",
              "full: one OpenFlamingo file gathered on rank 0; sharded: a directory, one file per rank + "
              "index.json "
              "(parallel.mode fsdp)")
          .choices({"full", "sharded"});
    }
    {
      SectionBuilder<GuardConfig> b(guard, "guard", "Loss-spike guard: roll back to a step checkpoint");
      b.field(&GuardConfig::enabled, "enabled", false,
              "Watch each dataset's step loss; on a spike go back to the newest step checkpoint before the "
              "window and skip the batches that led to it");
      b.field(&GuardConfig::window, "window", 8, "Steps of loss history per dataset the rule looks at")
          .unit("steps")
          .range(4, 10000);
      b.field(&GuardConfig::rule, "rule", "mad",
              "mad: robust z-score over the window (median and MAD); ema: ratio of the loss to an EMA of "
              "the window")
          .choices({"mad", "ema"});
      b.field(&GuardConfig::threshold, "threshold", 6.0,
              "A spike: z-score above it (mad) or loss / EMA above it (ema, > 1)")
          .range(0.0, 1e6);
      b.field(&GuardConfig::ema_beta, "ema_beta", 0.9,
              "ema: weight of the EMA's past per step, 0 <= beta < 1")
          .range(0.0, 1.0);
      b.field(&GuardConfig::skip_batches, "skip_batches", 0,
              "Batches skipped past the spike's, besides those from the checkpoint to it")
          .unit("batches")
          .min(0);
      b.field(&GuardConfig::lr_factor, "lr_factor", 1.0,
              "Learning-rate factor after a rollback, 0 < f <= 1 (1: none)")
          .range(0.0, 1.0);
      b.field(&GuardConfig::lr_factor_steps, "lr_factor_steps", 0, "Optimizer steps the factor applies for")
          .unit("steps")
          .min(0);
      b.field(&GuardConfig::max_rollbacks, "max_rollbacks", 3,
              "Rollbacks allowed; one more spike stops the run with an error")
          .range(1, 1000);
    }
    {
      SectionBuilder<TelemetryConfig> b(telemetry, "telemetry", "Live telemetry and logs");
      b.field(&TelemetryConfig::logging_steps, "logging_steps", 100,
              "Progress and log line interval (--logging_steps)")
          .unit("steps")
          .min(1);
      b.field(&TelemetryConfig::interval_steps, "interval_steps", 1, "Step event interval in events.jsonl")
          .unit("steps")
          .min(1);
      b.field(&TelemetryConfig::memory_every_steps, "memory_every_steps", 10,
              "Per-rank memory event interval")
          .unit("steps")
          .min(1);
      b.field(&TelemetryConfig::heartbeat_s, "heartbeat_s", 5.0, "Heartbeat event interval")
          .unit("s")
          .range(0.1, 3600);
      b.field(&TelemetryConfig::queue_capacity, "queue_capacity", 65536,
              "Telemetry queue; overflow is counted, never blocks")
          .unit("events")
          .range(16, 1 << 24);
    }
    {
      SectionBuilder<SlurmConfig> b(slurm, "slurm", "SLURM job settings (launch.kind = slurm)");
      b.field(&SlurmConfig::partition, "partition", "", "--partition; empty = cluster default");
      b.field(&SlurmConfig::account, "account", "", "--account; empty = none");
      b.field(&SlurmConfig::time_limit, "time_limit", "",
              "--time, e.g. 2-00:00:00; empty = partition default");
      b.field(&SlurmConfig::gpus_per_node, "gpus_per_node", 0, "--gpus-per-node, 0 = none requested")
          .range(0, 64);
      b.field(&SlurmConfig::cpus_per_task, "cpus_per_task", 0, "--cpus-per-task, 0 = default").range(0, 1024);
      b.field(&SlurmConfig::extra_args, "extra_args", std::vector<std::string>{},
              "More #SBATCH options, one per item");
    }
    {
      SectionBuilder<LaunchConfig> b(launch, "launch", "Where and how the ranks run");
      b.field(&LaunchConfig::kind, "kind", "local",
              "local: this machine; external: ranks started by torchrun, srun or flamingo-train launch; ssh: "
              "one node agent per host in launch.hosts; slurm: sbatch through a login node")
          .choices({"local", "external", "ssh", "slurm"});
      b.field(&LaunchConfig::nnodes, "nnodes", 1, "Nodes (torchrun --nnodes)").range(1, 4096);
      b.field(&LaunchConfig::nproc_per_node, "nproc_per_node", 1,
              "Ranks per node (torchrun --nproc_per_node)")
          .range(1, 1024);
      b.field(&LaunchConfig::threads_per_rank, "threads_per_rank", 0,
              "CPU threads per rank, 0 = cores / ranks")
          .range(0, 1024);
      b.field(&LaunchConfig::hosts, "hosts", std::vector<std::string>{},
              "[user@]host[:port] per node, node 0 first (ssh)");
      b.field(&LaunchConfig::master_addr, "master_addr", "127.0.0.1",
              "Rendezvous host (node 0) (torchrun --master_addr)");
      b.field(&LaunchConfig::master_port, "master_port", 29500, "Rendezvous port (torchrun --master_port)")
          .range(1, 65535);
      b.field(&LaunchConfig::remote_workdir, "remote_workdir", "",
              "Run root on remote nodes; empty = ~/flamingo-runs");
      b.field(&LaunchConfig::env, "env", StringMap{},
              "Environment variables for every rank on every node, NAME: value (e.g. OPENBLAS_CORETYPE); "
              "set by the launcher as torchrun's ranks inherit its environment");
      b.field(&LaunchConfig::max_restarts, "max_restarts", 0,
              "Times the node agents start every rank again after one fails, resuming from the newest "
              "checkpoint (local and ssh; torchrun --max-restarts)")
          .range(0, 1000);
      b.section(&LaunchConfig::slurm, slurm);
    }
    SectionBuilder<RunConfig> b(root, "", "Flamingo Studio run configuration");
    b.field(&RunConfig::schema_version, "schema_version", kConfigSchemaVersion,
            "Config schema version (MAJOR.MINOR)");
    b.field(&RunConfig::name, "name", "openflamingo3B", "Run name: the run directory's name (--run_name)")
        .required();
    b.field(&RunConfig::run_root, "run_root", "runs", "Folder that holds run directories").required();
    b.field(&RunConfig::seed, "seed", 42, "Seed: model init uses seed, data and dropout seed + rank (--seed)")
        .min(0);
    b.field(&RunConfig::compat, "compat", "default",
            "openflamingo: reproduce the reference's quirks exactly (clipping, NaN skip, scheduler "
            "length, MMC4 image-sentence assignment)")
        .choices({"default", "openflamingo"});
    b.section(&RunConfig::model, model);
    b.section(&RunConfig::data, data);
    b.section(&RunConfig::optim, optim);
    b.section(&RunConfig::parallel, parallel);
    b.section(&RunConfig::checkpoint, checkpoint);
    b.section(&RunConfig::guard, guard);
    b.section(&RunConfig::telemetry, telemetry);
    b.section(&RunConfig::launch, launch);
  }
};

const Schema& schemaInstance() {
  static const Schema s;
  return s;
}

}  // namespace

const SectionSpec& runConfigSchema() {
  return schemaInstance().root;
}

RunConfig defaultRunConfig() {
  RunConfig c;
  runConfigSchema().applyDefaults(&c);
  return c;
}

DatasetConfig defaultDataset(const std::string& name, const std::string& type) {
  DatasetConfig d;
  schemaInstance().dataset.applyDefaults(&d);
  d.name = name;
  d.type = type;
  return d;
}

}  // namespace fs::protocol
