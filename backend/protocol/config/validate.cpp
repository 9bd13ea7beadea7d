#include "backend/protocol/config/validate.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "backend/protocol/config/derived.h"
#include "backend/protocol/config/host_address.h"
#include "backend/protocol/config/launch_env.h"
#include "backend/protocol/config/lm_resolver.h"
#include "backend/protocol/config/model_catalog.h"
#include "backend/protocol/config/run_location.h"
#include "backend/protocol/config/schema.h"
#include "backend/protocol/config/shard_pattern.h"

namespace fs::protocol {
namespace {

std::string num(int64_t v) {
  return std::to_string(v);
}

class Checker {
 public:
  Checker(const RunConfig& c, FileChecks files) : c_(c), files_(files) {}

  std::vector<Problem> run() {
    fieldRules();
    datasetRules();
    modelRules();
    parallelRules();
    launchRules();
    scheduleRules();
    guardRules();
    return std::move(problems_);
  }

 private:
  void error(std::string path, std::string message, std::string fix = "") {
    problems_.push_back({Problem::Severity::kError, std::move(path), std::move(message), std::move(fix)});
  }
  void warning(std::string path, std::string message, std::string fix = "") {
    problems_.push_back({Problem::Severity::kWarning, std::move(path), std::move(message), std::move(fix)});
  }

  void fieldRules() {
    RunConfig& config = const_cast<RunConfig&>(c_);  // resolvePath takes a mutable object; nothing is written
    forEachField(runConfigSchema(), &c_, [&](const std::string& path, const EntrySpec& e, const void* owner) {
      if (!e.appliesWhen.empty()) {
        auto ref = resolvePath(runConfigSchema(), &config, path);
        if (ref && !fieldApplies(*ref->section, e, owner)) return;
      }
      const std::string why = checkValue(e, e.get(owner));
      if (!why.empty()) error(path, why);
    });
  }

  void datasetRules() {
    const auto& ds = c_.data.datasets;
    if (ds.empty()) {
      error("data.datasets", "no datasets: a run trains on at least one", "add a laion or mmc4 dataset");
      return;
    }
    std::set<std::string> names;
    const int64_t world = c_.worldSize();
    for (size_t i = 0; i < ds.size(); ++i) {
      const auto& d = ds[i];
      const std::string p = "data.datasets[" + num(static_cast<int64_t>(i)) + "]";
      if (!d.name.empty() && !names.insert(d.name).second) {
        error(p + ".name", "'" + d.name + "' is used by two datasets; names must be unique",
              "rename one of them");
      }
      if (d.type == "mmc4") {
        if (d.textsim_threshold > 1.0) {
          warning(
              p + ".textsim_threshold",
              std::to_string(d.textsim_threshold).substr(0, 6) +
                  " rejects every real MMC4 document (CLIP similarities are about 0.1-0.4); it is train.py's "
                  "default",
              "use 0.24 as the released OpenFlamingo recipe does");
        }
        if (d.min_num_images > d.max_num_images) {
          error(p + ".min_num_images",
                num(d.min_num_images) + " is more than max_num_images " + num(d.max_num_images) +
                    ": every document would be rejected",
                "lower min_num_images or raise max_num_images");
        }
      }
      if (resolvedMaxTokens(d) > c_.model.lm.max_positions) {
        error(p + ".max_tokens",
              num(resolvedMaxTokens(d)) + " tokens do not fit model.lm.max_positions " +
                  num(c_.model.lm.max_positions),
              "lower max_tokens");
      }
      if (!d.val_shards.empty()) {
        if (auto vc = countShards(d.val_shards); !vc) {
          error(p + ".val_shards", vc.status().message());
        } else if (d.val_shards.rfind("pipe:", 0) != 0 && static_cast<int64_t>(vc.value()) < world) {
          error(p + ".val_shards",
                num(static_cast<int64_t>(vc.value())) + " shards for " + num(world) + " ranks",
                "give every rank at least one validation shard");
        }
      }
      if (c_.data.source == "generated" && !d.shards.empty()) {
        error(p + ".shards",
              "'" + d.shards + "': data.source 'generated' cannot make dataset '" + d.name +
                  "' from these files; it writes each dataset's shards itself",
              "clear shards, or set data.source=shards to read them");
      }
      if (c_.data.source != "shards") continue;
      if (d.shards.empty()) {
        error(p + ".shards", "empty: data.source is 'shards' but dataset '" + d.name + "' names none",
              "set shards to a pattern like /data/" + (d.name.empty() ? std::string("x") : d.name) +
                  "/{00000..00099}.tar, or set data.source=synthetic");
        continue;
      }
      auto count = countShards(d.shards);
      if (!count) {
        error(p + ".shards", count.status().message());
        continue;
      }
      const int64_t needed = d.workers * world;
      if (!c_.data.resampled && d.shards.rfind("pipe:", 0) != 0 &&
          static_cast<int64_t>(count.value()) < needed) {
        const int64_t fitWorkers = static_cast<int64_t>(count.value()) / std::max<int64_t>(1, world);
        std::string fix = "enable data.resampled";
        if (fitWorkers >= 1) fix += ", use " + num(fitWorkers) + " worker" + (fitWorkers == 1 ? "" : "s");
        fix += ", or reshard into at least " + num(needed) + " shards";
        error(p + ".shards",
              num(static_cast<int64_t>(count.value())) + " shards < " + num(d.workers) + " workers x " +
                  num(world) + " ranks: some workers would get no shard",
              fix);
      }
    }
    if (c_.data.val_every_steps > 0 &&
        std::none_of(ds.begin(), ds.end(), [](const DatasetConfig& d) { return !d.val_shards.empty(); })) {
      warning("data.val_every_steps", "is " + num(c_.data.val_every_steps) + " but no dataset has val_shards",
              "set datasets[].val_shards, or val_every_steps=0");
    }
    // The reference asserts samples // batch is equal for every dataset it trains on.
    const auto& first = ds.front();
    if (first.batch_size <= 0) return;
    const int64_t batches = first.samples_per_epoch / first.batch_size;
    for (size_t i = 1; i < ds.size(); ++i) {
      const auto& d = ds[i];
      if (d.batch_size <= 0) continue;
      const int64_t b = d.samples_per_epoch / d.batch_size;
      if (b != batches) {
        error("data.datasets[" + num(static_cast<int64_t>(i)) + "].samples_per_epoch",
              "gives " + num(b) + " batches per epoch (" + num(d.samples_per_epoch) + " / " +
                  num(d.batch_size) + ") but '" + first.name + "' gives " + num(batches) + " (" +
                  num(first.samples_per_epoch) + " / " + num(first.batch_size) +
                  "); every dataset must give the same number",
              "set samples_per_epoch to " + num(batches * d.batch_size) + " or change the batch sizes");
      }
    }
  }

  void modelRules() {
    const auto& m = c_.model;
    if (m.vision.heads > 0 && m.vision.width % m.vision.heads != 0) {
      error("model.vision.heads",
            "width " + num(m.vision.width) + " is not divisible by " + num(m.vision.heads) + " heads");
    }
    if (m.vision.patch_size > 0 && m.vision.image_size % m.vision.patch_size != 0) {
      error("model.vision.patch_size", "image_size " + num(m.vision.image_size) +
                                           " is not a multiple of patch_size " + num(m.vision.patch_size));
    }
    if (m.lm.heads > 0 && m.lm.width % m.lm.heads != 0) {
      error("model.lm.heads",
            "width " + num(m.lm.width) + " is not divisible by " + num(m.lm.heads) + " heads");
    }
    if (m.cross_attn.every_n_layers > m.lm.layers) {
      error("model.cross_attn.every_n_layers",
            num(m.cross_attn.every_n_layers) + " is more than the LM's " + num(m.lm.layers) +
                " layers: the model would have no cross-attention",
            "use a value <= " + num(m.lm.layers));
    } else if (m.cross_attn.every_n_layers > 0 && m.lm.layers % m.cross_attn.every_n_layers != 0) {
      warning("model.cross_attn.every_n_layers", num(m.lm.layers) + " layers are not a multiple of " +
                                                     num(m.cross_attn.every_n_layers) +
                                                     ": the last layers get no cross-attention");
    }
    if (m.lm.tokenizer_path.empty()) tokenRules();
    if (files_ == FileChecks::kModelFiles && hasHfConfigJson(m.lm.path)) {
      // NOTE [LM resolution]: the directory's config.json is the source of truth.
      if (auto hf = readHfLmConfig(m.lm.path); !hf) {
        error("model.lm.path", hf.status().message(),
              "use a model of a supported family and configuration (backend/model/README.md)");
      } else {
        for (const auto& mismatch : lmMismatches(m.lm, *hf)) {
          error(mismatch.field, mismatch.message, "set it to the value config.json gives");
        }
      }
    } else if (auto k = findKnownLm(m.lm.path)) {
      const LmConfig& s = k->shape;
      if (s.family != m.lm.family || s.width != m.lm.width || s.layers != m.lm.layers ||
          s.heads != m.lm.heads || s.ffn_dim != m.lm.ffn_dim || s.vocab_size != m.lm.vocab_size) {
        warning("model.lm",
                "the dimensions differ from " + k->id + " (" + s.family + ", width " + num(s.width) + ", " +
                    num(s.layers) + " layers, " + num(s.heads) + " heads, ffn " + num(s.ffn_dim) +
                    ", vocab " + num(s.vocab_size) + "): its weights will not load",
                "use the preset for this model or clear model.lm.path for a random init");
      }
    }
    if (auto v = findKnownVision(m.vision.path); v && !m.vision.pretrained.empty()) {
      const VisionConfig& s = v->shape;
      if (s.width != m.vision.width || s.layers != m.vision.layers || s.patch_size != m.vision.patch_size ||
          s.heads != m.vision.heads) {
        warning("model.vision",
                "the dimensions differ from OpenCLIP " + v->name + ": its weights will not load",
                "use the preset for this tower or clear model.vision.pretrained");
      }
    }
  }

  void tokenRules() {
    const auto& t = c_.model.tokens;
    const std::pair<const char*, int64_t> ids[] = {{"eos_id", t.eos_id},
                                                   {"pad_id", t.pad_id},
                                                   {"image_id", t.image_id},
                                                   {"endofchunk_id", t.endofchunk_id}};
    for (const auto& [name, id] : ids) {
      if (id >= t.vocab_size) {
        error(std::string("model.tokens.") + name,
              num(id) + " is not below model.tokens.vocab_size " + num(t.vocab_size));
      }
    }
    if (t.image_id == t.endofchunk_id) {
      error("model.tokens.image_id",
            "<image> and <|endofchunk|> share id " + num(t.image_id) + "; they must differ");
    }
    for (const auto& [name, id] : {ids[0], ids[1]}) {
      if (id == t.image_id || id == t.endofchunk_id) {
        error(std::string("model.tokens.") + name,
              num(id) + " is also the id of <image> or <|endofchunk|>; special tokens must differ");
      }
    }
    if (t.vocab_size < c_.model.lm.vocab_size) {
      warning("model.tokens.vocab_size",
              num(t.vocab_size) + " is below model.lm.vocab_size " + num(c_.model.lm.vocab_size) +
                  ": the embedding is shrunk to the tokenizer length as OpenFlamingo does");
    }
  }

  void parallelRules() {
    const auto& p = c_.parallel;
    const bool fsdp = p.mode == "fsdp";
    // NOTE [Data stall] (shard_worker.h): while one rank waits for data its peers wait in a collective;
    // the data error (dataset, shard, command) should come first, not their collective timeout.
    if (c_.worldSize() > 1 && c_.data.stall_timeout_s >= p.collective_timeout_s) {
      warning("data.stall_timeout_s",
              "is " + num(c_.data.stall_timeout_s) +
                  " s, not below parallel.collective_timeout_s = " + num(p.collective_timeout_s) +
                  " s: when a rank's data goes quiet its peers' collective may time out first, with an "
                  "error that does not name the shard",
              "lower data.stall_timeout_s or raise parallel.collective_timeout_s");
    }
    if (fsdp && p.sharding_strategy == "hybrid_shard" && c_.launch.nnodes < 2) {
      error("parallel.sharding_strategy",
            "hybrid_shard shards inside a node and replicates across nodes, but launch.nnodes is " +
                num(c_.launch.nnodes),
            "use full_shard on one node, or set launch.nnodes >= 2");
    }
    if (!fsdp && p.sharding_strategy != "full_shard") {
      warning("parallel.sharding_strategy",
              "'" + p.sharding_strategy + "' has no effect with parallel.mode=ddp", "set parallel.mode=fsdp");
    }
    // NOTE [Original parameters]: train.py's --fsdp without --fsdp_use_orig_params optimizes FSDP1's flat
    // parameters: one group with weight decay on every trainable parameter (embeddings included) and no
    // embedding row mask. Our engine, single-process, DDP and FSDP alike, always steps the original
    // parameters in OpenFlamingo's groups (an FSDP flat parameter holds one decay group only,
    // backend/trainer/parallelize.h) and masks the embedding's rows, as train.py does with the flag, and
    // its checkpoints keep that per-parameter optimizer state. So true is the only value that says what
    // the run does; false is refused rather than ignored.
    if (!p.use_orig_params) {
      error("parallel.use_orig_params",
            "false asks for the reference's FSDP over flat parameters (one optimizer group decaying every "
            "trainable parameter, no embedding row mask), which this engine does not implement: it always "
            "steps the original parameters with per-parameter weight decay and the embedding row mask",
            "set parallel.use_orig_params=true (the default), or remove the line");
    }
    if (fsdp && p.wrap_policy == "custom" && p.wrap_patterns.empty()) {
      error("parallel.wrap_patterns", "empty, but parallel.wrap_policy is 'custom'",
            "list module-path patterns such as lang_encoder.model.decoder.layers.*");
    }
    if (fsdp && c_.compat == "openflamingo" && c_.model.lm.tied_head && !c_.model.freeze_lm_embeddings) {
      error("model.freeze_lm_embeddings",
            "the reference's FSDP cannot train tied LM embeddings (compat: openflamingo)",
            "set model.freeze_lm_embeddings=true, or compat=default (our FSDP trains tied embeddings)");
    }
    if (!fsdp && c_.checkpoint.format == "sharded") {
      error("checkpoint.format",
            "'sharded' writes each rank's FSDP shards, but parallel.mode is '" + p.mode + "'",
            "set parallel.mode=fsdp, or checkpoint.format=full");
    }
    mixedPrecisionRules(fsdp);
    if (fsdp && p.delayed_init && !p.sync_module_states) {
      error("parallel.delayed_init",
            "takes every weight from its node's first rank, but parallel.sync_module_states is false",
            "set parallel.sync_module_states=true, or parallel.delayed_init=false");
    }
    if (p.device == "cpu" && p.dist_backend == "nccl") {
      error("parallel.dist_backend", "'nccl' exchanges CUDA tensors only, but parallel.device is 'cpu'",
            "set parallel.dist_backend=gloo (or auto), or parallel.device=cuda");
    }
    // NOTE [CPU offload] (backend/fsdp/flat_param.h): FSDP's shards, their gradients and AdamW's state in
    // host memory, copied to the device around each use. Without FSDP there are no shards to keep there.
    if (p.cpu_offload && !fsdp) {
      error("parallel.cpu_offload",
            "keeps FSDP's parameter shards in host memory, but parallel.mode is '" + p.mode +
                "', which has no shards",
            "set parallel.mode=fsdp, or parallel.cpu_offload=false");
    } else if (p.cpu_offload && (p.device == "cpu" || p.dist_backend == "gloo")) {
      warning("parallel.cpu_offload",
              "on the CPU the shards are host memory already: offloading only adds a copy of each "
              "shard per gather, and keeps the shards out of node-shared memory",
              "leave it off on CPU runs");
    }
    if ((c_.optim.precision == "fp16" || c_.optim.precision == "amp_fp16") && p.dist_backend == "gloo") {
      warning("optim.precision", "fp16 is meant for CUDA; on CPU (gloo) use bf16 or amp_bf16");
    }
  }

  // NOTE [Planner dtypes] (fsdp_plan/precision_plan.h): units are gathered in param_dtype and the forward
  // computes with them, so it must be what the forward computes in or the weights' own dtype.
  void mixedPrecisionRules(bool fsdp) {
    // NOTE [Half weights need FSDP]: bf16 and fp16 store the weights in half precision, but only FSDP
    // casts them (the units are gathered in the param dtype); without it the trainer builds the model in
    // fp32 and casts only the images, so the first forward stops ("Input type (CPUBFloat16Type) and weight
    // type (CPUFloatType) should be the same"). The planner's single / ddp would count half weights.
    const auto& prec = c_.optim.precision;
    if (!fsdp && (prec == "bf16" || prec == "fp16")) {
      error("optim.precision",
            "'" + prec + "' with parallel.mode=" + c_.parallel.mode +
                ": without FSDP the engine does not cast the model to " + prec +
                " (only the images), so the first step would stop on a dtype mismatch",
            "use amp_" + prec + " (" + prec + " compute from fp32 weights), or set parallel.mode=fsdp");
    }
    const auto& mp = c_.parallel.mixed_precision;
    const bool set = mp.param_dtype != "auto" || mp.reduce_dtype != "auto" || mp.buffer_dtype != "auto";
    if (!fsdp) {
      if (set)
        warning("parallel.mixed_precision", "has no effect with parallel.mode=" + c_.parallel.mode,
                "set parallel.mode=fsdp, or leave the dtypes at auto");
      return;
    }
    const std::string compute = prec == "bf16" || prec == "amp_bf16"   ? "bf16"
                                : prec == "fp16" || prec == "amp_fp16" ? "fp16"
                                                                       : "fp32";
    const std::string weight = prec.rfind("amp_", 0) == 0 || prec == "fp32" ? "fp32" : compute;
    if (mp.param_dtype != "auto" && mp.param_dtype != compute && mp.param_dtype != weight) {
      error("parallel.mixed_precision.param_dtype",
            "'" + mp.param_dtype + "' under optim.precision " + prec + ": the forward computes in " +
                compute + " with weights stored in " + weight,
            "use auto, " + compute + (weight != compute ? " or " + weight : std::string()) +
                ", or change optim.precision (amp_bf16 computes in bf16 from fp32 weights)");
    }
  }

  void launchRules() {
    const auto& l = c_.launch;
    // ssh: the app starts one node agent per host (app/launch/ssh/ssh_launch.h); slurm: sbatch through a
    // login node, srun starts the ranks and SLURM picks the nodes, so hosts are not SLURM's to take.
    if (l.kind == "slurm" && !l.hosts.empty()) {
      error("launch.hosts",
            num(static_cast<int64_t>(l.hosts.size())) +
                " host(s) listed with launch.kind=slurm: SLURM chooses the nodes",
            "remove launch.hosts (use launch.slurm.extra_args with --nodelist=... to pin nodes)");
    }
    // NOTE [Restarts] (backend/launch/node_agent.h): only the node agents restart ranks.
    if (l.max_restarts > 0 && (l.kind == "slurm" || l.kind == "external")) {
      error("launch.max_restarts",
            num(l.max_restarts) + " with launch.kind=" + l.kind + ": only local and ssh runs restart " +
                (l.kind == "slurm" ? "(SLURM requeues a failed job itself)" : "(their launcher is yours)"),
            l.kind == "slurm" ? "set launch.max_restarts: 0 (the batch script asks SLURM for --requeue)"
                              : "set launch.max_restarts: 0 and use torchrun --max-restarts");
    }
    if (l.kind == "local" && l.nnodes > 1) {
      error("launch.nnodes", num(l.nnodes) + " nodes with launch.kind=local: a local run is one node",
            "use launch.kind=external and start the ranks on each node yourself, or nnodes=1");
    }
    if (l.kind == "ssh" && static_cast<int64_t>(l.hosts.size()) != l.nnodes) {
      error("launch.hosts",
            num(static_cast<int64_t>(l.hosts.size())) + " host(s) listed for " + num(l.nnodes) +
                " node(s); ssh launches need one host per node, node 0 first",
            "list exactly " + num(l.nnodes) + " hosts or change launch.nnodes");
    }
    // NOTE [Host addresses] (host_address.h).
    if (const std::string why = hostAddressProblem(l.master_addr); !l.master_addr.empty() && !why.empty()) {
      error("launch.master_addr", "'" + l.master_addr + "' is not an IP address or host name: " + why,
            "node 0's IP address (e.g. 10.0.0.2) or host name (letters, digits, '-' and '.')");
    }
    if (l.nnodes > 1 &&
        (l.master_addr.empty() || l.master_addr == "127.0.0.1" || l.master_addr == "localhost") &&
        l.kind == "ssh") {
      error("launch.master_addr", "'" + l.master_addr + "' cannot be reached from other nodes",
            "use node 0's address as the other nodes see it" +
                (l.hosts.empty() ? std::string() : " (e.g. the host of '" + l.hosts.front() + "')"));
    }
    // NOTE [Launch environment] (launch_env.h): names, values, the launcher's own variables.
    for (auto& p : validateLaunchEnv(l)) problems_.push_back(std::move(p));
    if (const auto omp = l.env.find("OMP_NUM_THREADS");
        omp != l.env.end() && l.threads_per_rank > 0 && omp->second != num(l.threads_per_rank)) {
      warning("launch.env.OMP_NUM_THREADS",
              "'" + omp->second + "' while launch.threads_per_rank is " + num(l.threads_per_rank) +
                  ": LibTorch's threads follow threads_per_rank, OpenMP and OpenBLAS follow launch.env",
              "remove launch.env.OMP_NUM_THREADS, or set both to one number");
    }
  }

  void scheduleRules() {
    if (c_.data.datasets.empty()) return;
    for (const auto& d : c_.data.datasets) {
      if (d.batch_size <= 0 || d.workers <= 0) return;
    }
    const DerivedFigures f = deriveFigures(c_);
    if (c_.optim.warmup_steps > 0 && c_.optim.warmup_steps >= f.schedulerSteps &&
        c_.optim.scheduler != "constant") {
      warning("optim.warmup_steps",
              num(c_.optim.warmup_steps) + " warmup steps >= the schedule's " + num(f.schedulerSteps) +
                  " steps: the lr never decays",
              "lower warmup_steps or train longer");
    } else if (c_.optim.warmup_steps > f.totalOptimizerSteps) {
      warning("optim.warmup_steps",
              num(c_.optim.warmup_steps) + " warmup steps > " + num(f.totalOptimizerSteps) +
                  " optimizer steps in the whole run: the lr never reaches optim.lr",
              "lower warmup_steps to at most " + num(f.totalOptimizerSteps));
    }
    if (c_.checkpoint.every_steps > f.totalSteps && f.totalSteps > 0) {
      warning("checkpoint.every_steps", num(c_.checkpoint.every_steps) + " > the run's " + num(f.totalSteps) +
                                            " steps: only epoch checkpoints will be written");
    }
  }

  // The schema checks each field's range; what is left are the open ends and the rules across fields.
  void guardRules() {
    const GuardConfig& g = c_.guard;
    if (g.lr_factor <= 0.0) {
      error("guard.lr_factor", "is " + dbl(g.lr_factor) + "; a learning-rate factor must be > 0 (and <= 1)",
            "use 1 for no factor, or a value such as 0.5");
    }
    if (g.ema_beta >= 1.0) {
      error("guard.ema_beta", "is " + dbl(g.ema_beta) + "; the EMA's decay must be < 1 (1 never moves)",
            "use 0.9");
    }
    if (g.threshold <= 0.0) {
      error("guard.threshold", "is " + dbl(g.threshold) + "; a spike threshold must be > 0", "use 6 (mad)");
    } else if (g.rule == "ema" && g.threshold <= 1.0) {
      error("guard.threshold",
            "is " + dbl(g.threshold) + " with rule ema: a ratio to the EMA <= 1 calls every step a spike",
            "use a ratio above 1, such as 2");
    }
    if (g.enabled && c_.checkpoint.every_steps == 0) {
      error("guard.enabled",
            "is true but checkpoint.every_steps is 0: the guard rolls back to step checkpoints and there "
            "would be none",
            "set checkpoint.every_steps (e.g. 100) or guard.enabled=false");
    }
  }
  static std::string dbl(double v) {
    std::ostringstream os;
    os << v;
    return os.str();
  }

  const RunConfig& c_;
  const FileChecks files_;
  std::vector<Problem> problems_;
};

}  // namespace

std::vector<Problem> validateConfig(const RunConfig& config, FileChecks files) {
  std::vector<Problem> problems = Checker(config, files).run();
  // NOTE [Run directory text] (run_location.h): name, run_root, launch.remote_workdir.
  for (auto& p : checkRunLocation(config)) problems.push_back(std::move(p));
  return problems;
}

}  // namespace fs::protocol
