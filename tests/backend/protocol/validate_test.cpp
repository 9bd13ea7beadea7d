#include "backend/protocol/config/validate.h"

#include <gtest/gtest.h>

#include "backend/protocol/config/config_override.h"
#include "backend/protocol/config/config_yaml.h"
#include "backend/protocol/config/derived.h"
#include "backend/protocol/config/host_address.h"
#include "test_util.h"

namespace fs::protocol {
namespace {

// A valid starting point: the tiny preset.
RunConfig tiny() {
  ConfigLoad load = loadConfigFile(test::sourcePath("resources/presets/tiny.yaml"));
  EXPECT_TRUE(load.ok()) << formatProblems(load.problems);
  return load.config;
}

RunConfig with(RunConfig c, const std::vector<std::string>& sets) {
  auto problems = applyOverrides(&c, sets);
  EXPECT_TRUE(problems.empty()) << formatProblems(problems);
  return c;
}

// The single problem at `path` (fails when there is none).
Problem problemAt(const std::vector<Problem>& problems, const std::string& path) {
  for (const auto& p : problems) {
    if (p.path == path) return p;
  }
  ADD_FAILURE() << "no problem at " << path << "; got:\n" << formatProblems(problems);
  return {};
}

TEST(Validate, TinyPresetIsClean) {
  auto problems = validateConfig(tiny());
  EXPECT_TRUE(problems.empty()) << formatProblems(problems);
}

TEST(Validate, EveryPresetHasNoErrors) {
  for (const char* name :
       {"small", "openflamingo-3b-vitl-mpt1b", "openflamingo-4b-vitl-rpj3b", "openflamingo-9b-vitl-mpt7b"}) {
    ConfigLoad load = loadConfigFile(test::sourcePath(std::string("resources/presets/") + name + ".yaml"));
    ASSERT_TRUE(load.ok());
    EXPECT_FALSE(hasErrors(validateConfig(load.config))) << name << "\n"
                                                         << formatProblems(validateConfig(load.config));
  }
}

TEST(Validate, ReturnsEveryProblemAtOnce) {
  RunConfig c = tiny();
  c.optim.lr = -1;
  c.data.datasets[0].batch_size = 0;
  c.optim.precision = "fp8";
  c.model.lm.heads = 3;
  auto problems = validateConfig(c);
  EXPECT_GE(problems.size(), 4u);
  EXPECT_NE(
      problemAt(problems, "optim.lr").message.find("-1.0 is out of range; expected a number in [0.0, 10.0]"),
      std::string::npos);
  EXPECT_NE(problemAt(problems, "data.datasets[0].batch_size").message.find("0 is out of range"),
            std::string::npos);
  EXPECT_NE(problemAt(problems, "optim.precision").message.find("'fp8' is not allowed"), std::string::npos);
  EXPECT_NE(problemAt(problems, "model.lm.heads").message.find("width 32 is not divisible by 3 heads"),
            std::string::npos);
}

TEST(Validate, GuardNamesEveryBadValue) {
  EXPECT_TRUE(
      validateConfig(with(tiny(), {"guard.enabled=true"})).empty());  // tiny checkpoints every 8 steps
  // Out-of-range values are refused by --set already; a YAML file or the form may still hold them.
  RunConfig c = with(tiny(), {"guard.enabled=true", "guard.lr_factor=0", "guard.ema_beta=1"});
  c.guard.window = 2;
  c.guard.skip_batches = -1;
  c.guard.max_rollbacks = 0;
  auto problems = validateConfig(c);
  EXPECT_NE(problemAt(problems, "guard.window").message.find("2 is out of range"), std::string::npos);
  EXPECT_NE(problemAt(problems, "guard.lr_factor").message.find("is 0; a learning-rate factor must be > 0"),
            std::string::npos);
  EXPECT_NE(problemAt(problems, "guard.ema_beta").message.find("is 1; the EMA's decay must be < 1"),
            std::string::npos);
  EXPECT_NE(problemAt(problems, "guard.skip_batches").message.find("-1 is out of range"), std::string::npos);
  EXPECT_NE(problemAt(problems, "guard.max_rollbacks").message.find("0 is out of range"), std::string::npos);
  c = with(tiny(), {"guard.rule=ema", "guard.threshold=1"});
  c.guard.lr_factor = 1.5;
  problems = validateConfig(c);
  EXPECT_NE(problemAt(problems, "guard.threshold").message.find("is 1 with rule ema"), std::string::npos);
  EXPECT_NE(problemAt(problems, "guard.lr_factor").message.find("1.5 is out of range"), std::string::npos);
  problems = validateConfig(with(tiny(), {"guard.enabled=true", "checkpoint.every_steps=0"}));
  EXPECT_NE(problemAt(problems, "guard.enabled").message.find("checkpoint.every_steps is 0"),
            std::string::npos);
}

TEST(Validate, ShardCountVersusWorkersTimesWorld) {
  RunConfig c = with(tiny(), {"data.source=shards", "data.datasets.laion.shards=/d/{00..11}.tar",
                              "data.datasets.mmc4.shards=/m/{0000..0999}.tar",
                              "data.datasets.laion.workers=4", "launch.nproc_per_node=4"});
  Problem p = problemAt(validateConfig(c), "data.datasets[0].shards");
  EXPECT_TRUE(p.isError());
  EXPECT_EQ(p.message, "12 shards < 4 workers x 4 ranks: some workers would get no shard");
  EXPECT_EQ(p.fix, "enable data.resampled, use 3 workers, or reshard into at least 16 shards");
  c.data.resampled = true;
  EXPECT_FALSE(hasErrors(validateConfig(c))) << formatProblems(validateConfig(c));
}

TEST(Validate, ShardsRequiredForShardSource) {
  RunConfig c = with(tiny(), {"data.source=shards"});
  Problem p = problemAt(validateConfig(c), "data.datasets[0].shards");
  EXPECT_NE(p.message.find("data.source is 'shards' but dataset 'laion' names none"), std::string::npos);
  EXPECT_NE(p.fix.find("data.source=synthetic"), std::string::npos);
  c = with(c, {"data.datasets.laion.shards=/d/{00..11.tar"});
  EXPECT_NE(problemAt(validateConfig(c), "data.datasets[0].shards").message.find("is never closed"),
            std::string::npos);
}

TEST(Validate, EqualBatchesPerEpochAcrossDatasets) {
  RunConfig c = with(tiny(), {"data.datasets.mmc4.samples_per_epoch=40"});
  Problem p = problemAt(validateConfig(c), "data.datasets[1].samples_per_epoch");
  EXPECT_EQ(p.message,
            "gives 20 batches per epoch (40 / 2) but 'laion' gives 16 (64 / 4); every dataset must give the "
            "same number");
  EXPECT_EQ(p.fix, "set samples_per_epoch to 32 or change the batch sizes");
}

TEST(Validate, SingleDatasetAndThreeDatasetsAreFine) {
  EXPECT_FALSE(hasErrors(validateConfig(with(tiny(), {"data.datasets=laion"}))));
  RunConfig three = with(tiny(), {"data.datasets[2].name=cc3m", "data.datasets.cc3m.batch_size=8",
                                  "data.datasets.cc3m.samples_per_epoch=128"});
  EXPECT_FALSE(hasErrors(validateConfig(three))) << formatProblems(validateConfig(three));
  RunConfig none = tiny();
  none.data.datasets.clear();
  EXPECT_TRUE(problemAt(validateConfig(none), "data.datasets").isError());
}

// data.source generated writes every dataset's shards itself: a dataset that names its own files is one it
// cannot make, and is refused by name rather than trained on generated data in their place.
TEST(Validate, GeneratedSourceRefusesADatasetWithShardsOfItsOwn) {
  RunConfig c =
      with(tiny(), {"data.datasets[2].name=cc3m", "data.datasets.cc3m.batch_size=8",
                    "data.datasets.cc3m.samples_per_epoch=128", "data.datasets.cc3m.shards=/d/cc3m.tar"});
  ASSERT_EQ(c.data.source, "generated");
  Problem p = problemAt(validateConfig(c), "data.datasets[2].shards");
  EXPECT_TRUE(p.isError());
  EXPECT_EQ(
      p.message,
      "'/d/cc3m.tar': data.source 'generated' cannot make dataset 'cc3m' from these files; it writes each "
      "dataset's shards itself");
  EXPECT_EQ(p.fix, "clear shards, or set data.source=shards to read them");
  EXPECT_FALSE(hasErrors(validateConfig(with(c, {"data.datasets.cc3m.shards="}))));
}

TEST(Validate, DuplicateDatasetNames) {
  RunConfig c = with(tiny(), {"data.datasets.mmc4.name=laion"});
  EXPECT_NE(problemAt(validateConfig(c), "data.datasets[1].name").message.find("used by two datasets"),
            std::string::npos);
}

TEST(Validate, HybridNeedsMoreThanOneNode) {
  RunConfig c = with(tiny(), {"parallel.mode=fsdp", "parallel.sharding_strategy=hybrid_shard"});
  Problem p = problemAt(validateConfig(c), "parallel.sharding_strategy");
  EXPECT_TRUE(p.isError());
  EXPECT_NE(p.message.find("launch.nnodes is 1"), std::string::npos);
}

TEST(Validate, StrategyWithoutFsdpIsAWarning) {
  RunConfig c = with(tiny(), {"parallel.sharding_strategy=shard_grad_op"});
  EXPECT_FALSE(problemAt(validateConfig(c), "parallel.sharding_strategy").isError());
}

// NOTE [Data stall]: with several ranks the data stall timeout stays below the collective timeout.
TEST(Validate, DataStallTimeoutNotBelowTheCollectiveTimeoutWarns) {
  Problem p = problemAt(validateConfig(with(tiny(), {"launch.nproc_per_node=2", "data.stall_timeout_s=600"})),
                        "data.stall_timeout_s");
  EXPECT_FALSE(p.isError());
  EXPECT_NE(p.message.find("not below parallel.collective_timeout_s = 600 s"), std::string::npos)
      << p.message;
  for (const auto& q : validateConfig(with(tiny(), {"launch.nproc_per_node=2"}))) {
    EXPECT_NE(q.path, "data.stall_timeout_s") << q.message;  // the defaults agree
  }
}

TEST(Validate, ShardedCheckpointsNeedFsdp) {
  Problem p = problemAt(validateConfig(with(tiny(), {"checkpoint.format=sharded"})), "checkpoint.format");
  EXPECT_TRUE(p.isError());
  EXPECT_NE(p.message.find("parallel.mode is 'ddp'"), std::string::npos) << p.message;
  for (const auto& q : validateConfig(with(tiny(), {"checkpoint.format=sharded", "parallel.mode=fsdp"}))) {
    EXPECT_NE(q.path, "checkpoint.format") << q.message;
  }
}

// NOTE [Half weights need FSDP] (validate.cpp): without FSDP nothing casts the model to bf16 / fp16.
TEST(Validate, HalfWeightsNeedFsdp) {
  for (const std::string prec : {"bf16", "fp16"}) {
    Problem p;  // the error (fp16 on gloo also has a warning there)
    for (const auto& q : validateConfig(with(tiny(), {"parallel.mode=ddp", "optim.precision=" + prec})))
      if (q.path == "optim.precision" && q.isError()) p = q;
    ASSERT_TRUE(p.isError() && !p.message.empty()) << prec;
    EXPECT_NE(p.message.find("'" + prec + "' with parallel.mode=ddp"), std::string::npos) << p.message;
    EXPECT_NE(p.fix.find("amp_" + prec), std::string::npos) << p.fix;
    EXPECT_NE(p.fix.find("parallel.mode=fsdp"), std::string::npos) << p.fix;
  }
  for (const std::string prec : {"fp32", "amp_bf16"}) {
    for (const auto& q : validateConfig(with(tiny(), {"parallel.mode=ddp", "optim.precision=" + prec})))
      EXPECT_FALSE(q.path == "optim.precision" && q.isError()) << prec << ": " << q.message;
  }
  for (const auto& q : validateConfig(with(tiny(), {"parallel.mode=fsdp", "optim.precision=bf16"})))
    EXPECT_FALSE(q.path == "optim.precision" && q.isError()) << q.message;
}

TEST(Validate, GatheredDtypeMustBeWhatTheForwardComputesInOrTheWeights) {
  const std::string fsdp = "parallel.mode=fsdp";
  Problem p = problemAt(validateConfig(with(tiny(), {fsdp, "parallel.mixed_precision.param_dtype=bf16"})),
                        "parallel.mixed_precision.param_dtype");
  EXPECT_TRUE(p.isError());
  EXPECT_NE(p.message.find("'bf16' under optim.precision fp32"), std::string::npos) << p.message;
  // amp_bf16 computes in bf16 from fp32 weights: both may be gathered.
  for (const std::string dtype : {"auto", "bf16", "fp32"}) {
    for (const auto& q : validateConfig(
             with(tiny(), {fsdp, "optim.precision=amp_bf16", "parallel.mixed_precision.param_dtype=" + dtype,
                           "parallel.mixed_precision.reduce_dtype=fp32"}))) {
      EXPECT_NE(q.path, "parallel.mixed_precision.param_dtype") << dtype << ": " << q.message;
    }
  }
  EXPECT_TRUE(problemAt(validateConfig(with(tiny(), {fsdp, "optim.precision=amp_bf16",
                                                     "parallel.mixed_precision.param_dtype=fp16"})),
                        "parallel.mixed_precision.param_dtype")
                  .isError());
  // Without FSDP nothing is gathered: a warning, not an error.
  Problem w = problemAt(validateConfig(with(tiny(), {"parallel.mixed_precision.reduce_dtype=bf16"})),
                        "parallel.mixed_precision");
  EXPECT_FALSE(w.isError());
  EXPECT_NE(w.message.find("no effect"), std::string::npos) << w.message;
}

TEST(Validate, DelayedInitNeedsTheWeightsBroadcast) {
  Problem p =
      problemAt(validateConfig(with(tiny(), {"parallel.mode=fsdp", "parallel.sync_module_states=false"})),
                "parallel.delayed_init");
  EXPECT_TRUE(p.isError());
  EXPECT_NE(p.message.find("parallel.sync_module_states is false"), std::string::npos) << p.message;
  // Either switch alone is fine, and DDP never reads delayed_init.
  for (const auto& sets : std::vector<std::vector<std::string>>{
           {"parallel.mode=fsdp", "parallel.sync_module_states=false", "parallel.delayed_init=false"},
           {"parallel.sync_module_states=false"}}) {
    for (const auto& q : validateConfig(with(tiny(), sets)))
      EXPECT_NE(q.path, "parallel.delayed_init") << q.message;
  }
}

// NOTE [CPU offload]: refused without FSDP (no shards), a warning on gloo (the CPU, where it gains
// nothing), accepted silently otherwise (a CUDA run).
TEST(Validate, CpuOffloadNeedsFsdpAndSaysItGainsNothingOnTheCpu) {
  Problem ddp = problemAt(validateConfig(with(tiny(), {"parallel.mode=ddp", "parallel.cpu_offload=true"})),
                          "parallel.cpu_offload");
  EXPECT_TRUE(ddp.isError());
  EXPECT_NE(ddp.message.find("parallel.mode is 'ddp'"), std::string::npos) << ddp.message;
  EXPECT_NE(ddp.fix.find("parallel.mode=fsdp"), std::string::npos) << ddp.fix;

  Problem gloo = problemAt(validateConfig(with(tiny(), {"parallel.mode=fsdp", "parallel.dist_backend=gloo",
                                                        "parallel.cpu_offload=true"})),
                           "parallel.cpu_offload");
  EXPECT_FALSE(gloo.isError());
  EXPECT_NE(gloo.message.find("host memory already"), std::string::npos) << gloo.message;

  for (const auto& q : validateConfig(
           with(tiny(), {"parallel.mode=fsdp", "parallel.dist_backend=nccl", "parallel.cpu_offload=true"})))
    EXPECT_NE(q.path, "parallel.cpu_offload") << q.message;
}

// NOTE [Original parameters]: the engine always steps the original parameters (per-parameter weight
// decay, the embedding row mask); false, which would mean the reference's flat-parameter optimizer, is
// refused by name under either mode, from --set and from a config file alike.
TEST(Validate, UseOrigParamsFalseIsRefusedByName) {
  EXPECT_TRUE(defaultRunConfig().parallel.use_orig_params);
  for (const char* mode : {"parallel.mode=ddp", "parallel.mode=fsdp"}) {
    for (const auto& q : validateConfig(with(tiny(), {mode, "parallel.use_orig_params=true"})))
      EXPECT_NE(q.path, "parallel.use_orig_params") << mode << ": " << q.message;
    Problem p = problemAt(validateConfig(with(tiny(), {mode, "parallel.use_orig_params=false"})),
                          "parallel.use_orig_params");
    EXPECT_TRUE(p.isError()) << mode;
    EXPECT_NE(p.message.find("false"), std::string::npos) << p.message;
    EXPECT_NE(p.message.find("does not implement"), std::string::npos) << p.message;
    EXPECT_NE(p.fix.find("parallel.use_orig_params=true"), std::string::npos) << p.fix;
  }
  ConfigLoad load = loadConfigYaml("parallel:\n  mode: fsdp\n  use_orig_params: false\n", "run.yaml");
  ASSERT_TRUE(load.ok()) << formatProblems(load.problems);
  EXPECT_TRUE(problemAt(validateConfig(load.config), "parallel.use_orig_params").isError());
}

TEST(Validate, NcclNeedsACudaDevice) {
  Problem p = problemAt(validateConfig(with(tiny(), {"parallel.device=cpu", "parallel.dist_backend=nccl"})),
                        "parallel.dist_backend");
  EXPECT_TRUE(p.isError());
  EXPECT_NE(p.message.find("parallel.device is 'cpu'"), std::string::npos) << p.message;
  EXPECT_NE(p.fix.find("parallel.dist_backend=gloo"), std::string::npos) << p.fix;
  // nccl with auto or cuda is the engine's to check at start-up (NOTE [Device choice]); gloo runs anywhere.
  for (const auto& sets :
       std::vector<std::vector<std::string>>{{"parallel.device=auto", "parallel.dist_backend=nccl"},
                                             {"parallel.device=cuda", "parallel.dist_backend=nccl"},
                                             {"parallel.device=cpu", "parallel.dist_backend=gloo"},
                                             {"parallel.device=cuda", "parallel.dist_backend=gloo"}}) {
    for (const auto& q : validateConfig(with(tiny(), sets)))
      EXPECT_NE(q.path, "parallel.dist_backend") << q.message;
  }
}

TEST(Validate, DeviceIsOneOfAutoCpuCuda) {
  RunConfig c = tiny();
  EXPECT_EQ(c.parallel.device, "auto");
  const auto problems = applyOverrides(&c, {"parallel.device=gpu"});
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_TRUE(problems[0].isError());
  EXPECT_NE(
      problems[0].toString().find("parallel.device: 'gpu' is not allowed; expected one of: auto, cpu, cuda"),
      std::string::npos)
      << problems[0].toString();
  for (const std::string v : {"auto", "cpu", "cuda"}) {
    for (const auto& q : validateConfig(with(tiny(), {"parallel.device=" + v})))
      EXPECT_NE(q.path, "parallel.device") << q.message;
  }
}

TEST(Validate, TrainPyThresholdDefaultWarnsWithRecipeValue) {
  RunConfig c = with(tiny(), {"data.datasets.mmc4.textsim_threshold=30"});
  Problem p = problemAt(validateConfig(c), "data.datasets[1].textsim_threshold");
  EXPECT_FALSE(p.isError());
  EXPECT_NE(p.message.find("rejects every real MMC4 document"), std::string::npos);
  EXPECT_NE(p.fix.find("0.24"), std::string::npos);
}

TEST(Validate, Mmc4OnlyFieldsAreIgnoredOnLaion) {
  RunConfig c = tiny();
  c.data.datasets[0].max_num_images = 0;  // out of range, but laion has no images-per-document
  EXPECT_FALSE(hasErrors(validateConfig(c))) << formatProblems(validateConfig(c));
  c.data.datasets[1].min_num_images = 5;
  EXPECT_NE(problemAt(validateConfig(c), "data.datasets[1].min_num_images")
                .message.find("more than max_num_images 2"),
            std::string::npos);
}

TEST(Validate, ModelShapeRules) {
  EXPECT_NE(problemAt(validateConfig(with(tiny(), {"model.vision.patch_size=7"})), "model.vision.patch_size")
                .message.find("image_size 32 is not a multiple of patch_size 7"),
            std::string::npos);
  EXPECT_NE(problemAt(validateConfig(with(tiny(), {"model.cross_attn.every_n_layers=3"})),
                      "model.cross_attn.every_n_layers")
                .message.find("no cross-attention"),
            std::string::npos);
  EXPECT_NE(problemAt(validateConfig(with(tiny(), {"data.datasets.mmc4.max_tokens=512"})),
                      "data.datasets[1].max_tokens")
                .message.find("do not fit model.lm.max_positions 128"),
            std::string::npos);
}

TEST(Validate, TokenIdRules) {
  EXPECT_NE(problemAt(validateConfig(with(tiny(), {"model.tokens.image_id=130"})), "model.tokens.image_id")
                .message.find("130 is not below model.tokens.vocab_size 130"),
            std::string::npos);
  EXPECT_NE(problemAt(validateConfig(with(tiny(), {"model.tokens.image_id=128"})), "model.tokens.image_id")
                .message.find("share id 128"),
            std::string::npos);
  EXPECT_TRUE(
      problemAt(validateConfig(with(tiny(), {"model.tokens.eos_id=129"})), "model.tokens.eos_id").isError());
}

TEST(Validate, KnownModelWithWrongShapeWarns) {
  RunConfig c = defaultRunConfig();
  c.model.lm.width = 1024;
  Problem p = problemAt(validateConfig(c), "model.lm");
  EXPECT_FALSE(p.isError());
  EXPECT_NE(p.message.find("differ from facebook/opt-1.3b"), std::string::npos);
}

TEST(Validate, LaunchRules) {
  EXPECT_TRUE(problemAt(validateConfig(with(tiny(), {"launch.nnodes=2"})), "launch.nnodes").isError());
  EXPECT_FALSE(hasErrors(validateConfig(with(tiny(), {"launch.kind=external", "launch.nnodes=2"}))));
  RunConfig ssh = with(tiny(), {"launch.kind=ssh", "launch.nnodes=2", "launch.hosts=[node0]"});
  auto problems = validateConfig(ssh);
  EXPECT_NE(problemAt(problems, "launch.hosts").message.find("1 host(s) listed for 2 node(s)"),
            std::string::npos);
  EXPECT_NE(problemAt(problems, "launch.master_addr").fix.find("node0"), std::string::npos);
}

// launch.max_restarts: a whole number 0..1000, and only where a node agent restarts (local, ssh).
TEST(Validate, MaxRestarts) {
  EXPECT_FALSE(hasErrors(validateConfig(with(tiny(), {"launch.max_restarts=2"}))));
  EXPECT_FALSE(hasErrors(
      validateConfig(with(tiny(), {"launch.kind=ssh", "launch.hosts=[a]", "launch.max_restarts=1"}))));
  RunConfig negative = tiny();
  negative.launch.max_restarts = -1;
  Problem p = problemAt(validateConfig(negative), "launch.max_restarts");
  EXPECT_TRUE(p.isError());
  EXPECT_NE(p.message.find("-1"), std::string::npos) << p.message;
  RunConfig c = tiny();
  auto bad = applyOverrides(&c, {"launch.max_restarts=1.5"});
  ASSERT_FALSE(bad.empty());
  EXPECT_NE(bad[0].message.find("launch.max_restarts"), std::string::npos) << bad[0].message;
  EXPECT_NE(bad[0].message.find("1.5"), std::string::npos) << bad[0].message;
  for (const char* kind : {"slurm", "external"}) {
    Problem q =
        problemAt(validateConfig(with(tiny(), {std::string("launch.kind=") + kind, "launch.max_restarts=1"})),
                  "launch.max_restarts");
    EXPECT_TRUE(q.isError()) << kind;
    EXPECT_NE(q.message.find(std::string("1 with launch.kind=") + kind), std::string::npos) << q.message;
  }
}

TEST(Validate, ReferenceFsdpCannotTrainTiedEmbeddings) {
  RunConfig c = with(tiny(), {"parallel.mode=fsdp", "compat=openflamingo"});
  EXPECT_TRUE(problemAt(validateConfig(c), "model.freeze_lm_embeddings").isError());
  EXPECT_FALSE(hasErrors(validateConfig(with(tiny(), {"parallel.mode=fsdp"}))));
}

TEST(Validate, CustomWrapNeedsPatterns) {
  RunConfig c = with(tiny(), {"parallel.mode=fsdp", "parallel.wrap_policy=custom"});
  EXPECT_TRUE(problemAt(validateConfig(c), "parallel.wrap_patterns").isError());
}

TEST(Validate, WarmupLongerThanRunWarns) {
  RunConfig c = with(tiny(), {"optim.warmup_steps=1000", "optim.scheduler=constant"});
  Problem p = problemAt(validateConfig(c), "optim.warmup_steps");
  EXPECT_FALSE(p.isError());
  EXPECT_NE(p.message.find("never reaches optim.lr"), std::string::npos);
}

TEST(Derived, FiguresAsTheReferenceRoundsThem) {
  RunConfig c =
      with(tiny(), {"launch.nproc_per_node=3", "data.datasets.laion.workers=2", "optim.grad_accum_steps=2"});
  const DerivedFigures f = deriveFigures(c);
  EXPECT_EQ(f.worldSize, 3);
  // laion: ceil(64 / 12) = 6 batches, rounded up to a multiple of 2 workers = 6
  EXPECT_EQ(f.datasets[0].globalBatch, 12);
  EXPECT_EQ(f.datasets[0].samplesPerOptimizerStep, 24);
  EXPECT_EQ(f.datasets[0].batchesPerEpoch, 6);
  EXPECT_EQ(f.datasets[0].samplesPerEpoch, 72);
  // mmc4: ceil(32 / 6) = 6
  EXPECT_EQ(f.datasets[1].batchesPerEpoch, 6);
  EXPECT_EQ(f.stepsPerEpoch, 6);
  EXPECT_EQ(f.optimizerStepsPerEpoch, 3);
  EXPECT_EQ(f.totalSteps, 12);
  EXPECT_EQ(f.totalOptimizerSteps, 6);
  EXPECT_EQ(f.schedulerSteps, 6);
  c.compat = "openflamingo";  // T = (32 // (2 * 3)) * 2 epochs, ignoring accumulation
  EXPECT_EQ(deriveFigures(c).schedulerSteps, 10);
}

TEST(Derived, PassesOverTheData) {
  RunConfig c = with(tiny(), {"data.datasets.laion.total_samples=32"});
  const DerivedFigures f = deriveFigures(c);
  ASSERT_TRUE(f.datasets[0].passes.has_value());
  EXPECT_DOUBLE_EQ(*f.datasets[0].passes, 4.0);  // 64 samples x 2 epochs / 32
  EXPECT_FALSE(f.datasets[1].passes.has_value());
  EXPECT_NE(formatFigures(f).find("passes over the data:     4.000"), std::string::npos) << formatFigures(f);
}

// ssh and slurm launch now; each has its own rules about hosts.
TEST(Validate, SshAndSlurmLaunchRules) {
  const RunConfig sshOk = with(
      tiny(), {"launch.kind=ssh", "launch.nnodes=2", "launch.hosts=[a, b]", "launch.master_addr=10.0.0.2"});
  EXPECT_FALSE(hasErrors(validateConfig(sshOk)));
  const Problem hosts = problemAt(validateConfig(with(sshOk, {"launch.hosts=[a]"})), "launch.hosts");
  EXPECT_TRUE(hosts.isError());
  EXPECT_NE(hosts.message.find("1 host(s) listed for 2 node(s)"), std::string::npos) << hosts.message;
  const Problem addr =
      problemAt(validateConfig(with(sshOk, {"launch.master_addr=127.0.0.1"})), "launch.master_addr");
  EXPECT_TRUE(addr.isError());
  EXPECT_FALSE(hasErrors(validateConfig(with(tiny(), {"launch.kind=slurm", "launch.nnodes=2"}))));
  const Problem slurmHosts =
      problemAt(validateConfig(with(tiny(), {"launch.kind=slurm", "launch.hosts=[a]"})), "launch.hosts");
  EXPECT_TRUE(slurmHosts.isError());
  EXPECT_NE(slurmHosts.message.find("SLURM chooses the nodes"), std::string::npos) << slurmHosts.message;
  EXPECT_FALSE(hasErrors(validateConfig(with(tiny(), {"launch.kind=external"}))));
  EXPECT_FALSE(hasErrors(validateConfig(with(tiny(), {"launch.kind=local"}))));
}

// NOTE [Host addresses]: launch.master_addr is an IP address or an RFC 1123
// host name; anything else (shell syntax, blanks, the unspecified address)
// is refused naming the field and the value.
TEST(Validate, MasterAddrIsAnAddressOrHostName) {
  for (const char* good :
       {"10.0.0.2", "127.0.0.1", "localhost", "node-0.cluster.example", "node0.", "fe80::1",
        "2001:db8::8a2e:370:7334", "::ffff:10.0.0.2", "1:2:3:4:5:6:7:8", "0node"}) {
    EXPECT_EQ(hostAddressProblem(good), "") << good;
    EXPECT_FALSE(hasErrors(validateConfig(with(tiny(), {std::string("launch.master_addr=") + good}))))
        << good;
  }
  for (const char* bad : {"0.0.0.0", "::",        "0:0:0:0:0:0:0:0", "$(touch x)",   "a;b",     "a b",
                          "node_0",  "-node",     "node-",           "a..b",         ".a",      "256.1.1.1",
                          "10.0.0",  "010.0.0.1", "[::1]",           "fe80::1%eth0", "1::2::3", "=ls",
                          "a'b",     "ä.example"}) {
    EXPECT_NE(hostAddressProblem(bad), "") << bad;
  }
  RunConfig c = tiny();
  c.launch.master_addr = "node0;touch /tmp/x";
  const Problem p = problemAt(validateConfig(c), "launch.master_addr");
  EXPECT_TRUE(p.isError());
  EXPECT_NE(p.message.find("'node0;touch /tmp/x' is not an IP address or host name"), std::string::npos)
      << p.message;
  EXPECT_NE(p.message.find("';'"), std::string::npos) << p.message;
  c.launch.master_addr = "0.0.0.0";
  EXPECT_NE(problemAt(validateConfig(c), "launch.master_addr").message.find("unspecified address"),
            std::string::npos);
  c.launch.master_addr = std::string(64, 'a');
  EXPECT_NE(problemAt(validateConfig(c), "launch.master_addr").message.find("longer than 63"),
            std::string::npos);
}

// NOTE [Launch environment]: each refusal names launch.env.<NAME> and says what is wrong.
TEST(Validate, LaunchEnvRefusalsNameTheField) {
  RunConfig ok = tiny();
  ok.launch.env = {{"OPENBLAS_CORETYPE", "Haswell"},
                   {"_x1", ""},
                   {"ODD", "spaces, 'quotes', \"double\" $(touch /tmp/canary) `id` ; | & * ~ \\"},
                   {"UNICODE", "\u03c0 \u00fcn\u00efcode"}};
  EXPECT_TRUE(validateConfig(ok).empty()) << formatProblems(validateConfig(ok));

  struct Case {
    std::string name, value, path, says;
  };
  const std::vector<Case> cases = {
      {"1ABC", "x", "launch.env.1ABC", "not a variable name"},
      {"A-B", "x", "launch.env.A-B", "not a variable name"},
      {"A B", "x", "launch.env.A B", "not a variable name"},
      {"A=B", "x", "launch.env.A=B", "not a variable name"},
      {"", "x", "launch.env.", "not a variable name"},
      {"NEWLINE", "a\nb", "launch.env.NEWLINE", "a newline"},
      {"NUL", std::string("a\0b", 3), "launch.env.NUL", "a NUL byte"},
      {"TAB", "a\tb", "launch.env.TAB", "a tab"},
      {"BELL", "a\x07", "launch.env.BELL", "control byte 0x07"},
      {"CR", "a\r", "launch.env.CR", "a carriage return"},
      {"RANK", "3", "launch.env.RANK", "set by the launcher"},
      {"WORLD_SIZE", "8", "launch.env.WORLD_SIZE", "set by the launcher"},
      {"LOCAL_RANK", "0", "launch.env.LOCAL_RANK", "set by the launcher"},
      {"LOCAL_WORLD_SIZE", "2", "launch.env.LOCAL_WORLD_SIZE", "set by the launcher"},
      {"GROUP_RANK", "0", "launch.env.GROUP_RANK", "set by the launcher"},
      {"NODE_RANK", "0", "launch.env.NODE_RANK", "set by the launcher"},
      {"MASTER_ADDR", "10.0.0.1", "launch.env.MASTER_ADDR", "set by the launcher"},
      {"MASTER_PORT", "29500", "launch.env.MASTER_PORT", "set by the launcher"},
      {"PMI_RANK", "0", "launch.env.PMI_RANK", "set by the launcher"},
      {"OMPI_COMM_WORLD_SIZE", "2", "launch.env.OMPI_COMM_WORLD_SIZE", "set by the launcher"},
      {"SLURM_PROCID", "0", "launch.env.SLURM_PROCID", "set by the launcher"},
      {"SLURM_CPU_BIND", "none", "launch.env.SLURM_CPU_BIND", "SLURM's"},
  };
  for (const Case& k : cases) {
    RunConfig c = tiny();
    c.launch.env[k.name] = k.value;
    const auto problems = validateConfig(c);
    const Problem p = problemAt(problems, k.path);
    EXPECT_TRUE(p.isError()) << k.path;
    EXPECT_NE(p.message.find(k.says), std::string::npos) << k.path << ": " << p.message;
    EXPECT_FALSE(p.fix.empty()) << k.path;
    EXPECT_EQ(problems.size(), 1u) << formatProblems(problems);
  }
  // Every refusal at once, each at its own path.
  RunConfig all = tiny();
  for (const Case& k : cases) all.launch.env[k.name] = k.value;
  EXPECT_EQ(validateConfig(all).size(), cases.size()) << formatProblems(validateConfig(all));
}

TEST(Validate, LaunchEnvOmpThreadsAgainstThreadsPerRankWarns) {
  const Problem p =
      problemAt(validateConfig(with(tiny(), {"launch.threads_per_rank=2", "launch.env.OMP_NUM_THREADS=4"})),
                "launch.env.OMP_NUM_THREADS");
  EXPECT_FALSE(p.isError());
  EXPECT_NE(p.message.find("launch.threads_per_rank is 2"), std::string::npos) << p.message;
  EXPECT_TRUE(
      validateConfig(with(tiny(), {"launch.threads_per_rank=2", "launch.env.OMP_NUM_THREADS=2"})).empty());
  EXPECT_TRUE(
      validateConfig(with(tiny(), {"launch.threads_per_rank=0", "launch.env.OMP_NUM_THREADS=4"})).empty());
}

}  // namespace
}  // namespace fs::protocol
