#include "backend/protocol/cmdline/cmdline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "backend/protocol/cmdline/shell_words.h"
#include "backend/protocol/config/config_yaml.h"
#include "backend/protocol/config/model_catalog.h"
#include "random_config.h"

namespace fs::protocol {
namespace {

using Words = std::vector<std::string>;

// OpenFlamingo's README (open_flamingo/train/README.md), verbatim.
const char* kReadmeCommand = R"(torchrun --nnodes=1 --nproc_per_node=4 train.py \
  --lm_path anas-awadalla/mpt-1b-redpajama-200b \
  --tokenizer_path anas-awadalla/mpt-1b-redpajama-200b \
  --cross_attn_every_n_layers 1 \
  --dataset_resampled \
  --batch_size_mmc4 32 \
  --batch_size_laion 64 \
  --train_num_samples_mmc4 125000\
  --train_num_samples_laion 250000 \
  --loss_multiplier_laion 0.2 \
  --workers=4 \
  --run_name OpenFlamingo-3B-vitl-mpt1b \
  --num_epochs 480 \
  --warmup_steps  1875 \
  --mmc4_textsim_threshold 0.24 \
  --laion_shards "/path/to/shards/shard-{0000..0999}.tar" \
  --mmc4_shards "/path/to/shards/shard-{0000..0999}.tar" \
  --report_to_wandb
)";

bool contains(const Words& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// The problems at `path` (errors and warnings).
std::vector<Problem> at(const std::vector<Problem>& problems, const std::string& path) {
  std::vector<Problem> out;
  for (const auto& p : problems) {
    if (p.path == path) out.push_back(p);
  }
  return out;
}

std::vector<Problem> errorsOf(const std::vector<Problem>& problems) {
  std::vector<Problem> out;
  for (const auto& p : problems) {
    if (p.isError()) out.push_back(p);
  }
  return out;
}

bool anyMentions(const std::vector<Problem>& problems, const std::string& text) {
  return std::any_of(problems.begin(), problems.end(),
                     [&](const Problem& p) { return p.message.find(text) != std::string::npos; });
}

// Equality with a readable diff on failure.
::testing::AssertionResult sameConfig(const RunConfig& a, const RunConfig& b) {
  if (a == b) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "configs differ:\n--- got\n"
                                       << dumpConfigYaml(a) << "--- expected\n"
                                       << dumpConfigYaml(b);
}

// ---------------------------------------------------------------- import

TEST(ImportCmdline, ReadmeCommand) {
  const CmdlineImport im = importOpenFlamingoCmdline(kReadmeCommand);
  EXPECT_TRUE(im.problems.empty()) << formatProblems(im.problems);
  EXPECT_TRUE(im.unknownFlags.empty());
  EXPECT_EQ(im.ignoredFlags, Words{"--report_to_wandb"});
  const RunConfig& c = im.config;

  EXPECT_EQ(c.model.lm.path, "anas-awadalla/mpt-1b-redpajama-200b");
  EXPECT_EQ(c.model.lm.tokenizer_path, "anas-awadalla/mpt-1b-redpajama-200b");
  EXPECT_EQ(c.model.lm.family, "mpt");
  EXPECT_EQ(c.model.lm.width, 2048);
  EXPECT_EQ(c.model.lm.layers, 24);
  EXPECT_EQ(c.model.lm.heads, 16);
  EXPECT_EQ(c.model.lm.vocab_size, 50432);
  EXPECT_EQ(c.model.cross_attn.every_n_layers, 1);
  EXPECT_TRUE(c.data.resampled);
  ASSERT_EQ(c.data.datasets.size(), 2u);
  const DatasetConfig& laion = c.data.datasets[0];
  const DatasetConfig& mmc4 = c.data.datasets[1];
  EXPECT_EQ(laion.name, "laion");
  EXPECT_EQ(laion.type, "laion");
  EXPECT_EQ(mmc4.name, "mmc4");
  EXPECT_EQ(mmc4.type, "mmc4");
  EXPECT_EQ(laion.batch_size, 64);
  EXPECT_EQ(mmc4.batch_size, 32);
  EXPECT_EQ(laion.samples_per_epoch, 250000);
  EXPECT_EQ(mmc4.samples_per_epoch, 125000);
  EXPECT_EQ(laion.loss_multiplier, 0.2);
  EXPECT_EQ(mmc4.loss_multiplier, 1.0);
  EXPECT_EQ(laion.workers, 4);
  EXPECT_EQ(mmc4.workers, 4);
  EXPECT_EQ(mmc4.textsim_threshold, 0.24);
  EXPECT_EQ(laion.shards, "/path/to/shards/shard-{0000..0999}.tar");
  EXPECT_EQ(mmc4.shards, "/path/to/shards/shard-{0000..0999}.tar");
  EXPECT_EQ(c.optim.epochs, 480);
  EXPECT_EQ(c.optim.warmup_steps, 1875);
  EXPECT_EQ(c.name, "OpenFlamingo-3B-vitl-mpt1b");
  EXPECT_EQ(c.launch.nnodes, 1);
  EXPECT_EQ(c.launch.nproc_per_node, 4);
  EXPECT_EQ(c.launch.kind, "local");

  // Nothing else changed: the whole config is the defaults plus the above.
  RunConfig expected = defaultRunConfig();
  expected.model.lm.path = expected.model.lm.tokenizer_path = "anas-awadalla/mpt-1b-redpajama-200b";
  applyKnownShapes(&expected.model);
  expected.data.resampled = true;
  expected.data.datasets[0] = laion;
  expected.data.datasets[1] = mmc4;
  expected.optim.epochs = 480;
  expected.optim.warmup_steps = 1875;
  expected.name = "OpenFlamingo-3B-vitl-mpt1b";
  expected.launch.nproc_per_node = 4;
  DatasetConfig laionDefault = defaultDataset("laion", "laion");
  laionDefault.batch_size = 64;
  laionDefault.samples_per_epoch = 250000;
  laionDefault.loss_multiplier = 0.2;
  laionDefault.workers = 4;
  laionDefault.shards = "/path/to/shards/shard-{0000..0999}.tar";
  EXPECT_EQ(laion, laionDefault);
  EXPECT_TRUE(sameConfig(c, expected));
}

TEST(ImportCmdline, ReadmeSlurmScriptWithSrun) {
  // open_flamingo/scripts/run_train.sh
  const CmdlineImport im = importOpenFlamingoCmdline(
      "srun --cpu_bind=v --accel-bind=gn python open_flamingo/open_flamingo/train/train.py \\\n"
      "    --lm_path anas-awadalla/mpt-1b-redpajama-200b \\\n"
      "    --tokenizer_path anas-awadalla/mpt-1b-redpajama-200b \\\n"
      "    --cross_attn_every_n_layers 1 \\\n"
      "    --dataset_resampled \\\n"
      "    --batch_size_mmc4 32 \\\n"
      "    --batch_size_laion 64 \\\n"
      "    --train_num_samples_mmc4 125000\\\n"
      "    --train_num_samples_laion 250000 \\\n"
      "    --workers=4 \\\n"
      "    --gradient_checkpointing \\\n"
      "    --report_to_wandb \\\n");
  EXPECT_TRUE(im.ok()) << formatProblems(im.problems);
  EXPECT_TRUE(im.unknownFlags.empty());
  EXPECT_EQ(im.ignoredFlags, (Words{"--cpu_bind=v", "--accel-bind=gn", "--report_to_wandb"}));
  EXPECT_EQ(im.config.launch.kind, "slurm");
  EXPECT_TRUE(im.config.model.gradient_checkpointing);
  EXPECT_EQ(at(im.problems, "launch").size(), 1u)
      << "srun without node counts: warn that the world is unknown";
}

TEST(ImportCmdline, NineBillionMultiNodeFsdp) {
  const CmdlineImport im = importOpenFlamingoCmdline(
      "NCCL_DEBUG=INFO OMP_NUM_THREADS=8 torchrun --nnodes 2 --nproc-per-node 8 --node_rank=0 "
      "--master-addr 10.0.0.1 --master_port=29501 open_flamingo/train/train.py \\\n"
      "  --vision_encoder_path ViT-L-14 --vision_encoder_pretrained openai \\\n"
      "  --lm_path anas-awadalla/mpt-7b --tokenizer_path anas-awadalla/mpt-7b \\\n"
      "  --cross_attn_every_n_layers 4 --fsdp --fsdp_use_orig_params --precision amp_bfloat16 \\\n"
      "  --gradient_checkpointing --freeze_lm_embeddings --learning_rate 2e-4 --lr_scheduler cosine \\\n"
      "  --batch_size_mmc4 8 --batch_size_laion 16 --train_num_samples_mmc4 10000 "
      "--train_num_samples_laion 20000 --gradient_accumulation_steps 4 --seed 7 --logging_steps 10 \\\n"
      "  --dist-backend nccl --delete_previous_checkpoint --resume_from_checkpoint /ckpt/checkpoint_3.pt \\\n"
      "  --wandb_project of9b --wandb_entity me\n");
  EXPECT_TRUE(im.problems.empty()) << formatProblems(im.problems);
  EXPECT_TRUE(im.unknownFlags.empty());
  EXPECT_EQ(im.ignoredFlags, (Words{"NCCL_DEBUG=INFO", "OMP_NUM_THREADS=8", "--node_rank=0",
                                    "--wandb_project of9b", "--wandb_entity me"}));
  const RunConfig& c = im.config;
  EXPECT_EQ(c.launch.kind, "ssh");
  EXPECT_EQ(c.launch.nnodes, 2);
  EXPECT_EQ(c.launch.nproc_per_node, 8);
  EXPECT_EQ(c.launch.master_addr, "10.0.0.1");
  EXPECT_EQ(c.launch.master_port, 29501);
  EXPECT_TRUE(c.launch.hosts.empty());
  EXPECT_EQ(c.model.lm.family, "mpt");
  EXPECT_EQ(c.model.lm.width, 4096);
  EXPECT_EQ(c.model.lm.layers, 32);
  EXPECT_EQ(c.model.cross_attn.every_n_layers, 4);
  EXPECT_EQ(c.parallel.mode, "fsdp");
  EXPECT_TRUE(c.parallel.use_orig_params);
  EXPECT_EQ(c.parallel.sharding_strategy, "full_shard");
  EXPECT_EQ(c.parallel.dist_backend, "nccl");
  EXPECT_EQ(c.optim.precision, "amp_bf16");
  EXPECT_EQ(c.optim.lr, 2e-4);
  EXPECT_EQ(c.optim.scheduler, "cosine");
  EXPECT_EQ(c.optim.grad_accum_steps, 4);
  EXPECT_EQ(c.seed, 7);
  EXPECT_EQ(c.telemetry.logging_steps, 10);
  EXPECT_TRUE(c.model.gradient_checkpointing);
  EXPECT_TRUE(c.model.freeze_lm_embeddings);
  EXPECT_TRUE(c.checkpoint.delete_previous);
  EXPECT_EQ(c.checkpoint.resume_from, "/ckpt/checkpoint_3.pt");
  EXPECT_EQ(c.data.datasets[1].batch_size, 8);
}

TEST(ImportCmdline, FsdpHybridSlurmScript) {
  // open_flamingo/scripts/run_train_fsdp.sh (a later branch: --model_family is not a v2.0 flag)
  const CmdlineImport im = importOpenFlamingoCmdline(
      R"(srun --cpu_bind=v --accel-bind=gn python open_flamingo/open_flamingo/train/train.py \
    --lm_path meta-llama/Llama-2-13b \
    --tokenizer_path meta-llama/Llama-2-13b \
    --model_family flamingo \
    --cross_attn_every_n_layers 4 \
    --dataset_resampled \
    --batch_size_mmc4 16 \
    --batch_size_laion 32 \
    --fsdp \
    --fsdp_sharding_strategy hybrid \
    --train_num_samples_mmc4 125000\
    --train_num_samples_laion 250000 \
    --loss_multiplier_laion 0.2 \
    --workers=4 \
    --run_name "fsdp" \
    --num_epochs 480 \
    --warmup_steps  0 \
    --mmc4_textsim_threshold 0.0 \
    --laion_shards "/path/to/laion-samples/{000000..000001}.tar" \
    --mmc4_shards "/path/to/mmc4-samples/{000000..000001}.tar" \
    --report_to_wandb
)");
  EXPECT_TRUE(im.ok()) << formatProblems(im.problems);
  EXPECT_EQ(im.unknownFlags, Words{"--model_family flamingo"});
  const RunConfig& c = im.config;
  EXPECT_EQ(c.launch.kind, "slurm");
  EXPECT_EQ(c.parallel.mode, "fsdp");
  // --fsdp without --fsdp_use_orig_params: we still step the original parameters, and say so.
  EXPECT_TRUE(c.parallel.use_orig_params);
  ASSERT_EQ(at(im.problems, "parallel.use_orig_params").size(), 1u) << formatProblems(im.problems);
  EXPECT_FALSE(at(im.problems, "parallel.use_orig_params")[0].isError());
  EXPECT_NE(
      at(im.problems, "parallel.use_orig_params")[0].message.find("--fsdp without --fsdp_use_orig_params"),
      std::string::npos);
  EXPECT_EQ(c.parallel.sharding_strategy, "hybrid_shard");
  EXPECT_EQ(c.name, "fsdp");
  EXPECT_EQ(c.optim.warmup_steps, 0);
  EXPECT_EQ(c.data.datasets[1].textsim_threshold, 0.0);
  EXPECT_EQ(c.data.datasets[0].shards, "/path/to/laion-samples/{000000..000001}.tar");
  // Llama-2-13b is not in the catalog: the shape stays at the defaults, with a warning.
  EXPECT_EQ(c.model.lm.path, "meta-llama/Llama-2-13b");
  EXPECT_EQ(at(im.problems, "model.lm.path").size(), 1u);
  EXPECT_FALSE(at(im.problems, "model.lm.path")[0].isError());
}

TEST(ImportCmdline, SrunNodeCountsMapOntoLaunch) {
  const CmdlineImport im = importOpenFlamingoCmdline(
      "srun -N2 --ntasks-per-node=8 --gpus-per-node 8 -p gpu -A proj -t 2-00:00:00 -c 12 --job-name of "
      "python -u train.py --batch_size_laion 8");
  EXPECT_TRUE(im.problems.empty()) << formatProblems(im.problems);
  const LaunchConfig& l = im.config.launch;
  EXPECT_EQ(l.kind, "slurm");
  EXPECT_EQ(l.nnodes, 2);
  EXPECT_EQ(l.nproc_per_node, 8);
  EXPECT_EQ(l.slurm.gpus_per_node, 8);
  EXPECT_EQ(l.slurm.partition, "gpu");
  EXPECT_EQ(l.slurm.account, "proj");
  EXPECT_EQ(l.slurm.time_limit, "2-00:00:00");
  EXPECT_EQ(l.slurm.cpus_per_task, 12);
  EXPECT_EQ(im.ignoredFlags, (Words{"--job-name of", "-u"}));

  const CmdlineImport tasks = importOpenFlamingoCmdline("srun --nodes=4 -n 32 python train.py");
  EXPECT_EQ(tasks.config.launch.nnodes, 4);
  EXPECT_EQ(tasks.config.launch.nproc_per_node, 8);
}

TEST(ImportCmdline, PythonModuleLaunchersAndRendezvous) {
  const CmdlineImport im = importOpenFlamingoCmdline(
      "python3 -m torch.distributed.run --standalone --nproc-per-node=2 --rdzv_endpoint=node0:1234 "
      "--rdzv-backend c10d --nnodes 1:3 ./train.py --seed 1");
  EXPECT_TRUE(im.ok()) << formatProblems(im.problems);
  EXPECT_EQ(im.config.launch.nproc_per_node, 2);
  EXPECT_EQ(im.config.launch.nnodes, 3);  // the upper bound of the elastic range, with a warning
  EXPECT_TRUE(anyMentions(im.problems, "--nnodes 1:3 is a range"));
  EXPECT_EQ(im.config.launch.master_addr, "node0");
  EXPECT_EQ(im.config.launch.master_port, 1234);
  EXPECT_EQ(im.config.launch.kind, "ssh");
  EXPECT_EQ(im.ignoredFlags, (Words{"--standalone", "--rdzv-backend c10d"}));

  const CmdlineImport legacy =
      importOpenFlamingoCmdline("python -m torch.distributed.launch --nproc_per_node 4 --use_env train.py");
  EXPECT_TRUE(legacy.problems.empty()) << formatProblems(legacy.problems);
  EXPECT_EQ(legacy.config.launch.nproc_per_node, 4);
  EXPECT_EQ(legacy.ignoredFlags, Words{"--use_env"});

  const CmdlineImport v6 = importOpenFlamingoCmdline("torchrun --rdzv_endpoint [fe80::1]:29400 train.py");
  EXPECT_EQ(v6.config.launch.master_addr, "fe80::1");
  EXPECT_EQ(v6.config.launch.master_port, 29400);

  const CmdlineImport gpu = importOpenFlamingoCmdline("torchrun --nproc_per_node gpu train.py");
  EXPECT_EQ(gpu.config.launch.nproc_per_node, 1);
  EXPECT_EQ(at(gpu.problems, "launch.nproc_per_node").size(), 1u);
}

TEST(ImportCmdline, PlainPythonOrJustTheFlags) {
  const CmdlineImport py = importOpenFlamingoCmdline("python -u open_flamingo/train/train.py --seed 3");
  EXPECT_TRUE(py.problems.empty()) << formatProblems(py.problems);
  EXPECT_EQ(py.config.seed, 3);
  EXPECT_EQ(py.ignoredFlags, Words{"-u"});
  EXPECT_EQ(py.config.launch.kind, "local");

  const CmdlineImport flags = importOpenFlamingoCmdline("--seed 5 --run_name x");
  EXPECT_TRUE(flags.problems.empty()) << formatProblems(flags.problems);
  EXPECT_EQ(flags.config.seed, 5);
  EXPECT_EQ(flags.config.name, "x");

  const CmdlineImport env = importOpenFlamingoCmdline("CUDA_VISIBLE_DEVICES=0,1 --seed 5");
  EXPECT_EQ(env.ignoredFlags, Words{"CUDA_VISIBLE_DEVICES=0,1"});
  EXPECT_EQ(env.config.seed, 5);

  const CmdlineImport other = importOpenFlamingoCmdline("python my_script.py --seed 6");
  EXPECT_EQ(other.config.seed, 6);
  EXPECT_TRUE(anyMentions(other.problems, "is not train.py"));
}

TEST(ImportCmdline, FlagEqualsValueAndArgparsePrefixes) {
  const CmdlineImport im = importOpenFlamingoCmdline(
      "train.py --batch_size_laion=12 --run_name=--odd --lm_path= --learning_rate=-0.5 --batch_size_l 13");
  EXPECT_EQ(im.config.data.datasets[0].batch_size, 13);  // the prefix, last, wins
  EXPECT_EQ(im.config.name, "--odd");
  EXPECT_EQ(im.config.model.lm.path, "");
  EXPECT_TRUE(anyMentions(im.problems, "read as --batch_size_laion"));
  EXPECT_TRUE(anyMentions(im.problems, "repeats --batch_size_laion"));
  EXPECT_EQ(at(im.problems, "optim.lr").size(), 1u) << "-0.5 is out of range";

  const CmdlineImport ambiguous = importOpenFlamingoCmdline("train.py --batch 4");
  EXPECT_FALSE(ambiguous.ok());
  EXPECT_EQ(ambiguous.unknownFlags, Words{"--batch 4"});
  EXPECT_TRUE(anyMentions(ambiguous.problems, "ambiguous"));
}

TEST(ImportCmdline, UnknownFlagsAreListedNeverDropped) {
  const CmdlineImport im = importOpenFlamingoCmdline(
      "torchrun --weird 3 train.py --foo bar --baz --qux=1 stray --seed 2 --deepspeed");
  EXPECT_EQ(im.unknownFlags, (Words{"--weird 3", "--foo bar", "--baz", "--qux=1", "stray", "--deepspeed"}));
  EXPECT_EQ(im.config.seed, 2);
}

TEST(ImportCmdline, S3ShardsBecomePipesAsTrainPyDoes) {
  const CmdlineImport im = importOpenFlamingoCmdline(
      "train.py --laion_shards s3://bucket/laion/{00000..00999}.tar --mmc4_shards 'pipe:curl -s "
      "https://x/{0..9}.tar'");
  EXPECT_EQ(im.config.data.datasets[0].shards, "pipe:aws s3 cp 's3://bucket/laion/{00000..00999}.tar' -");
  EXPECT_EQ(im.config.data.datasets[1].shards, "pipe:curl -s https://x/{0..9}.tar");
}

TEST(ImportCmdline, DatasetsAreThoseTheFlagsMention) {
  const auto names = [](const RunConfig& c) {
    Words n;
    for (const auto& d : c.data.datasets) n.push_back(d.name + "/" + d.type);
    return n;
  };
  EXPECT_EQ(names(importOpenFlamingoCmdline("train.py --seed 1").config),
            (Words{"laion/laion", "mmc4/mmc4"}));
  EXPECT_EQ(names(importOpenFlamingoCmdline("train.py --batch_size_mmc4 4").config), Words{"mmc4/mmc4"});
  EXPECT_EQ(names(importOpenFlamingoCmdline("train.py --mmc4_max_num_images 3 --laion_shards a").config),
            (Words{"laion/laion", "mmc4/mmc4"}));

  const CmdlineImport one = importOpenFlamingoCmdline("train.py --workers 3 --train_num_samples_laion 50");
  ASSERT_EQ(one.config.data.datasets.size(), 1u);
  EXPECT_EQ(one.config.data.datasets[0].workers, 3);  // --workers before the dataset flag still applies
  EXPECT_EQ(one.config.data.datasets[0].samples_per_epoch, 50);

  // Pre-2.0 names of the MMC4 flags.
  const CmdlineImport c4 = importOpenFlamingoCmdline(
      "train.py --c4_shards /c4/{0..3}.tar --batch_size_c4 7 --loss_multiplier_c4 0.5 --train_num_samples_c4 "
      "70 "
      "--c4_textsim_threshold 0.3 --fsdp_cpu_offload --use_media_placement_augmentation");
  EXPECT_TRUE(c4.problems.empty()) << formatProblems(c4.problems);
  ASSERT_EQ(c4.config.data.datasets.size(), 1u);
  const DatasetConfig& m = c4.config.data.datasets[0];
  EXPECT_EQ(m.name, "mmc4");
  EXPECT_EQ(m.shards, "/c4/{0..3}.tar");
  EXPECT_EQ(m.batch_size, 7);
  EXPECT_EQ(m.loss_multiplier, 0.5);
  EXPECT_EQ(m.samples_per_epoch, 70);
  EXPECT_EQ(m.textsim_threshold, 0.3);
  EXPECT_TRUE(c4.config.parallel.cpu_offload);
  EXPECT_EQ(c4.ignoredFlags, Words{"--use_media_placement_augmentation"});
}

TEST(ImportCmdline, BadValuesNameTheFlagAndTheValue) {
  struct Case {
    std::string args;
    std::string path;
    std::string text;  // in the message
  };
  const std::vector<Case> cases = {
      {"--batch_size_laion abc", "data.datasets[0].batch_size",
       "--batch_size_laion: 'abc' is not an integer"},
      {"--workers 0", "data.datasets[0].workers", "--workers '0'"},
      {"--learning_rate fast", "optim.lr", "'fast'"},
      {"--precision fp64", "optim.precision", "--precision 'fp64'"},
      {"--precision amp_fp16", "optim.precision", "--precision 'amp_fp16'"},
      {"--fsdp_sharding_strategy shard_grad_op", "parallel.sharding_strategy", "'shard_grad_op'"},
      {"--dist-backend mpi", "parallel.dist_backend", "'mpi'"},
      {"--run_name ''", "name", "must not be empty"},
      {"--seed", "seed", "--seed expects a value"},
      {"--cross_attn_every_n_layers --seed 1", "model.cross_attn.every_n_layers", "expects a value"},
  };
  for (const auto& k : cases) {
    const CmdlineImport im = importOpenFlamingoCmdline("train.py " + k.args);
    EXPECT_FALSE(im.ok()) << k.args;
    const auto problems = at(im.problems, k.path);
    ASSERT_EQ(problems.size(), 1u) << k.args << "\n" << formatProblems(im.problems);
    EXPECT_TRUE(problems[0].isError());
    EXPECT_NE(problems[0].message.find(k.text), std::string::npos) << problems[0].message;
  }
  const CmdlineImport sw = importOpenFlamingoCmdline("train.py --fsdp=true");
  EXPECT_FALSE(sw.ok());
  EXPECT_EQ(sw.config.parallel.mode, "ddp");
  EXPECT_TRUE(anyMentions(sw.problems, "takes no value"));
}

TEST(ImportCmdline, UnknownSchedulerFallsBackToConstantWithAWarning) {
  const CmdlineImport im = importOpenFlamingoCmdline("train.py --lr_scheduler warmup_cosine");
  EXPECT_TRUE(im.ok());
  EXPECT_EQ(im.config.optim.scheduler, "constant");
  ASSERT_EQ(at(im.problems, "optim.scheduler").size(), 1u);
  EXPECT_NE(at(im.problems, "optim.scheduler")[0].message.find("warmup_cosine"), std::string::npos);
}

TEST(ImportCmdline, EmptyTokenizerMeansTheLmsAsInTrainPy) {
  const CmdlineImport im =
      importOpenFlamingoCmdline("train.py --tokenizer_path '' --lm_path facebook/opt-125m");
  EXPECT_EQ(im.config.model.lm.tokenizer_path, "facebook/opt-125m");
  EXPECT_EQ(im.config.model.lm.width, 768);
}

TEST(ImportCmdline, LineErrorsAndOddities) {
  const CmdlineImport quote = importOpenFlamingoCmdline("train.py --run_name 'oops");
  ASSERT_EQ(quote.problems.size(), 1u);
  EXPECT_NE(quote.problems[0].message.find("column 21"), std::string::npos) << quote.problems[0].message;
  EXPECT_FALSE(importOpenFlamingoCmdline("").ok());
  EXPECT_FALSE(importOpenFlamingoCmdline("torchrun --nproc_per_node 2").ok());

  const CmdlineImport expansion = importOpenFlamingoCmdline("train.py --laion_shards \"$LAION/{0..9}.tar\"");
  EXPECT_EQ(expansion.config.data.datasets[0].shards, "$LAION/{0..9}.tar");
  EXPECT_TRUE(anyMentions(expansion.problems, "shell expansion"));

  const CmdlineImport space = importOpenFlamingoCmdline("train.py --seed 1 \\ \n --workers 2");
  EXPECT_EQ(space.config.data.datasets[0].workers, 2);
  EXPECT_TRUE(anyMentions(space.problems, "whitespace"));
}

// ---------------------------------------------------------------- export

TEST(ExportCmdline, DefaultsGiveTheShortestLine) {
  const CmdlineExport ex = exportOpenFlamingoCmdline(defaultRunConfig());
  EXPECT_EQ(ex.argv, (Words{"torchrun", "--nnodes=1", "--nproc_per_node=1", "train.py", "--batch_size_laion",
                            "128", "--train_num_samples_laion", "10000", "--batch_size_mmc4", "128",
                            "--train_num_samples_mmc4", "10000"}));
  EXPECT_EQ(
      ex.line,
      "torchrun --nnodes=1 --nproc_per_node=1 train.py \\\n  --batch_size_laion 128 \\\n"
      "  --train_num_samples_laion 10000 \\\n  --batch_size_mmc4 128 \\\n  --train_num_samples_mmc4 10000");
  EXPECT_TRUE(errorsOf(ex.notExpressible).empty()) << formatProblems(ex.notExpressible);
  // The defaults have no shards, which train.py needs: two warnings.
  EXPECT_EQ(at(ex.notExpressible, "data.datasets[0].shards").size(), 1u);
  EXPECT_EQ(at(ex.notExpressible, "data.datasets[1].shards").size(), 1u);
}

TEST(ExportCmdline, ReadmeRoundTrip) {
  const CmdlineImport im = importOpenFlamingoCmdline(kReadmeCommand);
  const CmdlineExport ex = exportOpenFlamingoCmdline(im.config);
  EXPECT_TRUE(ex.notExpressible.empty()) << formatProblems(ex.notExpressible);
  auto split = splitShellWords(ex.line);
  ASSERT_TRUE(split.isOk()) << split.status().message();
  EXPECT_EQ(split.value(), ex.argv);
  EXPECT_TRUE(sameConfig(importOpenFlamingoCmdline(ex.line).config, im.config));
  EXPECT_NE(ex.line.find("--laion_shards '/path/to/shards/shard-{0000..0999}.tar' \\\n"), std::string::npos)
      << ex.line;
  EXPECT_NE(ex.line.find("  --loss_multiplier_laion 0.2 \\\n"), std::string::npos) << ex.line;
  EXPECT_NE(ex.line.find("  --mmc4_textsim_threshold 0.24"), std::string::npos) << ex.line;
}

TEST(ExportCmdline, BracesSpacesQuotesAndDashesSurvive) {
  RunConfig c = defaultRunConfig();
  c.data.datasets[0].shards = "/data/my laion/{00000..00099}.tar::/more/{a,b}.tar";
  c.data.datasets[1].shards = "pipe:aws s3 cp s3://b/mmc4/{0..9}.tar -";
  c.name = "it's a \"run\" $HOME `x` \\ ~";
  c.checkpoint.resume_from = "-starts-with-dash";
  c.launch.master_addr = "host with space";
  c.optim.lr = 3.0000000000000004e-05;
  const CmdlineExport ex = exportOpenFlamingoCmdline(c);
  EXPECT_TRUE(errorsOf(ex.notExpressible).empty()) << formatProblems(ex.notExpressible);
  EXPECT_TRUE(contains(ex.argv, "--resume_from_checkpoint=-starts-with-dash"));
  EXPECT_TRUE(contains(ex.argv, "--master_addr=host with space"));
  auto split = splitShellWords(ex.line);
  ASSERT_TRUE(split.isOk());
  EXPECT_EQ(split.value(), ex.argv);
  EXPECT_TRUE(sameConfig(importOpenFlamingoCmdline(ex.line).config, c));
}

TEST(ExportCmdline, MultiNodeWritesTheRendezvous) {
  RunConfig c = defaultRunConfig();
  c.launch.kind = "ssh";
  c.launch.nnodes = 4;
  c.launch.nproc_per_node = 8;
  c.launch.master_addr = "10.1.2.3";
  const CmdlineExport ex = exportOpenFlamingoCmdline(c);
  EXPECT_EQ(Words(ex.argv.begin(), ex.argv.begin() + 6),
            (Words{"torchrun", "--nnodes=4", "--nproc_per_node=8", "--master_addr=10.1.2.3",
                   "--master_port=29500", "train.py"}));
  EXPECT_TRUE(errorsOf(ex.notExpressible).empty()) << formatProblems(ex.notExpressible);
}

// NOTE [Original parameters]: under FSDP the line carries --fsdp_use_orig_params, so train.py steps the
// original parameters as we do; under DDP train.py ignores it and the line leaves it out; false is ours
// to refuse and not expressible.
TEST(ExportCmdline, FsdpWritesUseOrigParams) {
  RunConfig c = defaultRunConfig();
  c.parallel.mode = "fsdp";
  const CmdlineExport fsdp = exportOpenFlamingoCmdline(c);
  EXPECT_TRUE(errorsOf(fsdp.notExpressible).empty()) << formatProblems(fsdp.notExpressible);
  EXPECT_TRUE(contains(fsdp.argv, "--fsdp"));
  EXPECT_TRUE(contains(fsdp.argv, "--fsdp_use_orig_params"));
  const CmdlineImport back = importOpenFlamingoArgs(fsdp.argv);
  EXPECT_TRUE(at(back.problems, "parallel.use_orig_params").empty()) << formatProblems(back.problems);
  EXPECT_TRUE(sameConfig(back.config, c));

  const CmdlineExport ddp = exportOpenFlamingoCmdline(defaultRunConfig());
  EXPECT_FALSE(contains(ddp.argv, "--fsdp_use_orig_params"));

  c.parallel.use_orig_params = false;
  const CmdlineExport refused = exportOpenFlamingoCmdline(c);
  ASSERT_EQ(at(refused.notExpressible, "parallel.use_orig_params").size(), 1u)
      << formatProblems(refused.notExpressible);
  EXPECT_TRUE(at(refused.notExpressible, "parallel.use_orig_params")[0].isError());
}

// Each kind of difference a train.py line cannot carry, reported exactly once at its path.
TEST(ExportCmdline, EveryKindOfNonExpressibleDifferenceIsReportedWithItsPath) {
  struct Case {
    std::string what;
    std::function<void(RunConfig&)> change;
    std::string path;
  };
  const std::vector<Case> cases = {
      {"no flag", [](RunConfig& c) { c.model.perceiver.depth = 4; }, "model.perceiver.depth"},
      {"no flag (root)", [](RunConfig& c) { c.compat = "openflamingo"; }, "compat"},
      {"no flag (data)", [](RunConfig& c) { c.data.source = "synthetic"; }, "data.source"},
      {"no flag (list)", [](RunConfig& c) { c.parallel.wrap_patterns = {"a.*"}; }, "parallel.wrap_patterns"},
      {"shape of a known LM", [](RunConfig& c) { c.model.lm.width = 1234; }, "model.lm.width"},
      {"shape of a known tower", [](RunConfig& c) { c.model.vision.quick_gelu = false; },
       "model.vision.quick_gelu"},
      {"workers differ", [](RunConfig& c) { c.data.datasets[1].workers = 3; }, "data.datasets[1].workers"},
      {"dataset name", [](RunConfig& c) { c.data.datasets[0].name = "cc3m"; }, "data.datasets[0].name"},
      {"third dataset", [](RunConfig& c) { c.data.datasets.push_back(defaultDataset("obelics", "mmc4")); },
       "data.datasets[2]"},
      {"two of one type", [](RunConfig& c) { c.data.datasets[1] = defaultDataset("coyo", "laion"); },
       "data.datasets[1]"},
      {"order", [](RunConfig& c) { std::swap(c.data.datasets[0], c.data.datasets[1]); }, "data.datasets"},
      {"no datasets", [](RunConfig& c) { c.data.datasets.clear(); }, "data.datasets"},
      {"dataset field without flag", [](RunConfig& c) { c.data.datasets[0].max_tokens = 64; },
       "data.datasets[0].max_tokens"},
      {"mmc4 field on laion", [](RunConfig& c) { c.data.datasets[0].textsim_threshold = 0.2; },
       "data.datasets[0].textsim_threshold"},
      {"s3 shards", [](RunConfig& c) { c.data.datasets[0].shards = "s3://b/{0..9}.tar"; },
       "data.datasets[0].shards"},
      {"precision", [](RunConfig& c) { c.optim.precision = "amp_fp16"; }, "optim.precision"},
      {"sharding", [](RunConfig& c) { c.parallel.sharding_strategy = "no_shard"; },
       "parallel.sharding_strategy"},
      {"cpu offload", [](RunConfig& c) { c.parallel.cpu_offload = true; }, "parallel.cpu_offload"},
      {"device cpu", [](RunConfig& c) { c.parallel.device = "cpu"; }, "parallel.device"},
      {"device cuda", [](RunConfig& c) { c.parallel.device = "cuda"; }, "parallel.device"},
      {"empty tokenizer", [](RunConfig& c) { c.model.lm.tokenizer_path = ""; }, "model.lm.tokenizer_path"},
      {"slurm", [](RunConfig& c) { c.launch.kind = "slurm"; }, "launch.kind"},
      {"slurm settings", [](RunConfig& c) { c.launch.slurm.partition = "gpu"; }, "launch.slurm.partition"},
      {"hosts",
       [](RunConfig& c) {
         c.launch.hosts = {"a", "b"};
       },
       "launch.hosts"},
      {"environment",
       [](RunConfig& c) {
         c.launch.env = {{"OPENBLAS_CORETYPE", "Haswell"}};
       },
       "launch.env"},
      {"invalid value", [](RunConfig& c) { c.data.datasets[0].batch_size = 0; },
       "data.datasets[0].batch_size"},
  };
  for (const auto& k : cases) {
    RunConfig c = defaultRunConfig();
    k.change(c);
    const CmdlineExport ex = exportOpenFlamingoCmdline(c);
    const auto errors = errorsOf(ex.notExpressible);
    ASSERT_EQ(errors.size(), 1u) << k.what << "\n" << formatProblems(ex.notExpressible);
    EXPECT_EQ(errors[0].path, k.path) << k.what << ": " << errors[0].toString();
    EXPECT_NE(errors[0].message.find("cannot write"), std::string::npos) << errors[0].message;
    EXPECT_FALSE(sameConfig(importOpenFlamingoArgs(ex.argv).config, c)) << k.what;
  }
}

TEST(ExportCmdline, LaunchEnvSaysTheLineCarriesNoEnvironment) {
  RunConfig c = defaultRunConfig();
  c.launch.env = {{"OPENBLAS_CORETYPE", "Haswell"}, {"X", "a b"}};
  const auto errors = errorsOf(exportOpenFlamingoCmdline(c).notExpressible);
  ASSERT_EQ(errors.size(), 1u) << formatProblems(errors);
  EXPECT_EQ(errors[0].path, "launch.env");
  EXPECT_NE(errors[0].message.find(
                "cannot write {OPENBLAS_CORETYPE: \"Haswell\", X: \"a b\"} on a train.py line (a "
                "train.py line carries no environment"),
            std::string::npos)
      << errors[0].message;
  EXPECT_NE(errors[0].message.find("the line means {}"), std::string::npos) << errors[0].message;
  // Leading VAR=value words stay ignored on import: they are not launch.env.
  const CmdlineImport im = importOpenFlamingoCmdline("OPENBLAS_CORETYPE=Haswell torchrun train.py");
  EXPECT_TRUE(im.config.launch.env.empty());
  EXPECT_EQ(im.ignoredFlags, (Words{"OPENBLAS_CORETYPE=Haswell"}));
}

TEST(ExportCmdline, DeviceSaysWhatTrainPyDoes) {
  RunConfig c = defaultRunConfig();
  c.parallel.device = "cpu";
  auto errors = errorsOf(exportOpenFlamingoCmdline(c).notExpressible);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].message,
            "cannot write 'cpu' on a train.py line (train.py has no option to train on the CPU; it takes "
            "cuda:<local rank> whenever CUDA is available); the line means 'auto'");
  c.parallel.device = "cuda";
  errors = errorsOf(exportOpenFlamingoCmdline(c).notExpressible);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].message.find("which is what auto means"), std::string::npos) << errors[0].message;
  // auto is the absent flag: nothing to say.
  c.parallel.device = "auto";
  EXPECT_TRUE(errorsOf(exportOpenFlamingoCmdline(c).notExpressible).empty());
}

TEST(ExportCmdline, MessagesSayOursAndWhatTheLineMeans) {
  RunConfig c = defaultRunConfig();
  c.model.perceiver.depth = 4;
  c.data.datasets[1].workers = 3;
  const auto errors = errorsOf(exportOpenFlamingoCmdline(c).notExpressible);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].message,
            "cannot write 4 on a train.py line (train.py has no option for it); the line means 6");
  EXPECT_NE(errors[1].message.find("one --workers for every dataset"), std::string::npos)
      << errors[1].message;
  EXPECT_NE(errors[1].message.find("cannot write 3"), std::string::npos);
  EXPECT_NE(errors[1].message.find("the line means 1"), std::string::npos);
}

TEST(ExportCmdline, WarnsWhereTrainPyItselfWouldFail) {
  RunConfig c = defaultRunConfig();
  c.data.datasets.erase(c.data.datasets.begin());  // mmc4 only: expressible here, not for train.py
  c.data.datasets[0].shards = "/m/{0..9}.tar";
  c.optim.precision = "bf16";
  const CmdlineExport ex = exportOpenFlamingoCmdline(c);
  EXPECT_TRUE(errorsOf(ex.notExpressible).empty()) << formatProblems(ex.notExpressible);
  EXPECT_EQ(at(ex.notExpressible, "data.datasets").size(), 1u);
  EXPECT_EQ(at(ex.notExpressible, "optim.precision").size(), 1u);
  EXPECT_TRUE(sameConfig(importOpenFlamingoArgs(ex.argv).config, c));

  RunConfig uneven = defaultRunConfig();
  uneven.data.datasets[0].batch_size = 64;
  EXPECT_TRUE(anyMentions(exportOpenFlamingoCmdline(uneven).notExpressible, "train.py asserts"));
}

// ---------------------------------------------------------------- generated round trip

std::string randomText(std::mt19937& rng, bool allowEmpty) {
  static const std::string alphabet =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 "
      "_-./:=,{}[]*?$`'\"\\#~!&|;<>()\t\n\xc3\xa9";
  std::uniform_int_distribution<int> len(allowEmpty ? 0 : 1, 16);
  std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1);
  std::string s;
  for (int i = len(rng); i > 0; --i) s += alphabet[pick(rng)];
  return s;
}

template <class T>
const T& pickOne(std::mt19937& rng, const std::vector<T>& v) {
  return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
}

// A random config whose every difference from the defaults a train.py line can carry.
RunConfig randomExpressibleConfig(std::mt19937& rng) {
  auto coin = [&] { return std::bernoulli_distribution(0.5)(rng); };
  auto integer = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  auto real = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  RunConfig c = defaultRunConfig();

  ModelConfig& m = c.model;
  const int lmKind = static_cast<int>(integer(0, 2));
  if (lmKind == 1) m.lm.path = pickOne(rng, knownLms()).id;
  if (lmKind == 2) m.lm.path = "/ckpt/" + randomText(rng, false);
  m.lm.tokenizer_path =
      pickOne(rng, std::vector<std::string>{m.lm.tokenizer_path, m.lm.path, randomText(rng, false)});
  if (coin()) m.vision.path = pickOne(rng, knownVisionTowers()).name;
  m.vision.pretrained =
      pickOne(rng, std::vector<std::string>{"openai", "laion2b_s32b_b82k", "", randomText(rng, true)});
  applyKnownShapes(&m);
  m.cross_attn.every_n_layers = integer(1, 8);
  m.freeze_lm_embeddings = coin();
  m.gradient_checkpointing = coin();

  c.name = randomText(rng, false);
  c.seed = integer(0, 1'000'000'000);
  c.checkpoint.resume_from = coin() ? "" : randomText(rng, true);
  c.checkpoint.delete_previous = coin();
  c.telemetry.logging_steps = integer(1, 1000);

  c.optim.epochs = integer(1, 1000);
  c.optim.lr = real(0, 10);
  c.optim.scheduler = pickOne(rng, std::vector<std::string>{"constant", "linear", "cosine"});
  c.optim.warmup_steps = integer(0, 100000);
  c.optim.weight_decay = real(0, 10);
  c.optim.grad_accum_steps = integer(1, 64);
  c.optim.precision = pickOne(rng, std::vector<std::string>{"fp32", "bf16", "fp16", "amp_bf16"});

  c.data.resampled = coin();
  const int which = static_cast<int>(integer(0, 3));  // 0, 1: both; 2: laion only; 3: mmc4 only
  c.data.datasets.clear();
  if (which != 3) c.data.datasets.push_back(defaultDataset("laion", "laion"));
  if (which != 2) c.data.datasets.push_back(defaultDataset("mmc4", "mmc4"));
  const int64_t workers = integer(1, 16);
  for (auto& d : c.data.datasets) {
    d.shards = pickOne(rng, std::vector<std::string>{"", "/data/" + d.name + " shards/{00000..09999}.tar",
                                                     "pipe:aws s3 cp s3://bucket/{0..99}.tar -",
                                                     "/a/{0..9}.tar::/b/{x,y}.tar", randomText(rng, true)});
    if (d.shards.rfind("s3", 0) == 0) d.shards = "x" + d.shards;
    d.batch_size = integer(1, 512);
    d.samples_per_epoch = integer(1, 10'000'000);
    d.loss_multiplier = coin() ? 1.0 : real(0, 5);
    d.workers = workers;
    if (d.type == "mmc4") {
      d.textsim_threshold = coin() ? 30.0 : real(-1, 100);
      d.max_num_images = integer(1, 32);
      d.min_num_images = integer(0, 32);
    }
  }

  c.parallel.mode = coin() ? "ddp" : "fsdp";
  c.parallel.use_orig_params = true;  // false is refused (NOTE [Original parameters]) and not expressible
  c.parallel.sharding_strategy = coin() ? "full_shard" : "hybrid_shard";
  c.parallel.dist_url = coin() ? "env://" : "tcp://" + randomText(rng, false);
  c.parallel.dist_backend = pickOne(rng, std::vector<std::string>{"auto", "nccl", "gloo"});

  c.launch.nnodes = integer(1, 8);
  c.launch.nproc_per_node = integer(1, 8);
  c.launch.kind = c.launch.nnodes > 1 ? "ssh" : "local";
  if (coin()) c.launch.master_addr = randomText(rng, false);
  if (coin()) c.launch.master_port = integer(1, 65535);
  return c;
}

TEST(CmdlineRoundTrip, GeneratedExpressibleConfigsComeBackExactly) {
  std::mt19937 rng(424242);
  for (int trial = 0; trial < 400; ++trial) {
    const RunConfig c = randomExpressibleConfig(rng);
    const CmdlineExport ex = exportOpenFlamingoCmdline(c);
    ASSERT_TRUE(errorsOf(ex.notExpressible).empty()) << "trial " << trial << "\n"
                                                     << formatProblems(ex.notExpressible) << ex.line;
    auto split = splitShellWords(ex.line);
    ASSERT_TRUE(split.isOk()) << split.status().message() << "\n" << ex.line;
    ASSERT_EQ(split.value(), ex.argv) << ex.line;
    const CmdlineImport back = importOpenFlamingoCmdline(ex.line);
    ASSERT_TRUE(back.ok()) << formatProblems(back.problems) << ex.line;
    ASSERT_TRUE(back.unknownFlags.empty()) << ex.line;
    ASSERT_TRUE(back.ignoredFlags.empty()) << ex.line;
    ASSERT_TRUE(sameConfig(back.config, c)) << "trial " << trial << "\n" << ex.line;
  }
}

// The other direction of NOTE [Command-line round trip]: any config at all
// (random changes anywhere) comes back exactly iff no error is reported.
TEST(CmdlineRoundTrip, ErrorsAreExactlyTheFieldsThatDoNotComeBack) {
  std::mt19937 rng(99);
  const std::vector<std::function<void(RunConfig&)>> changes = {
      [](RunConfig& c) { c.model.perceiver.num_latents = 32; },
      [](RunConfig& c) { c.model.lm.layers = 3; },
      [](RunConfig& c) { c.model.vision.output_dim = 1; },
      [](RunConfig& c) { c.data.datasets.push_back(defaultDataset("extra", "laion")); },
      [](RunConfig& c) { c.optim.precision = "amp_fp16"; },
      [](RunConfig& c) { c.launch.hosts = {"h1"}; },
      [](RunConfig& c) { c.telemetry.interval_steps = 5; },
      [](RunConfig& c) { c.parallel.sharding_strategy = "shard_grad_op"; },
      [](RunConfig& c) { c.model.lm.tokenizer_path = ""; },
      [](RunConfig& c) { c.launch.kind = "slurm"; },
      [](RunConfig& c) { c.parallel.use_orig_params = false; },
  };
  for (int trial = 0; trial < 200; ++trial) {
    RunConfig c = randomExpressibleConfig(rng);
    std::vector<size_t> applied;
    for (size_t k = 0; k < changes.size(); ++k) {
      if (std::bernoulli_distribution(0.15)(rng)) {
        changes[k](c);
        applied.push_back(k);
      }
    }
    const CmdlineExport ex = exportOpenFlamingoCmdline(c);
    const bool exact = importOpenFlamingoArgs(ex.argv).config == c;
    EXPECT_EQ(errorsOf(ex.notExpressible).empty(), exact) << formatProblems(ex.notExpressible);
    EXPECT_EQ(exact, applied.empty()) << "trial " << trial << "\n" << formatProblems(ex.notExpressible);
  }
}

// Arbitrary configs (every field random, through the schema): export never
// fails, its line splits back, errors are reported iff the line does not
// import back exactly, and what the line means is itself expressible.
TEST(CmdlineRoundTrip, AnyConfigAtAll) {
  fs::test::RandomConfig random(2024);
  for (int trial = 0; trial < 300; ++trial) {
    const RunConfig c = random.next();
    const CmdlineExport ex = exportOpenFlamingoCmdline(c);
    auto split = splitShellWords(ex.line);
    ASSERT_TRUE(split.isOk()) << split.status().message() << "\n" << ex.line;
    ASSERT_EQ(split.value(), ex.argv);
    const RunConfig meant = importOpenFlamingoArgs(ex.argv).config;
    EXPECT_EQ(errorsOf(ex.notExpressible).empty(), meant == c) << formatProblems(ex.notExpressible);
    for (const auto& p : errorsOf(ex.notExpressible)) {
      EXPECT_EQ(p.message.find("internal"), std::string::npos) << p.toString();
    }
    const CmdlineExport again = exportOpenFlamingoCmdline(meant);
    ASSERT_TRUE(errorsOf(again.notExpressible).empty()) << formatProblems(again.notExpressible) << ex.line;
    ASSERT_TRUE(sameConfig(importOpenFlamingoArgs(again.argv).config, meant));
  }
}

// Random word lists made of launcher words, flags, values and junk never
// crash the import, and every problem says something.
TEST(ImportCmdline, RandomWordsNeverCrash) {
  const Words pool = {"torchrun",
                      "python",
                      "-m",
                      "torch.distributed.run",
                      "srun",
                      "-N",
                      "2-4",
                      "--nnodes",
                      "1:2",
                      "train.py",
                      "x/train.py",
                      "--workers",
                      "0",
                      "-1",
                      "--batch_size_laion",
                      "--batch",
                      "--fsdp=1",
                      "--precision",
                      "amp_fp16",
                      "--laion_shards",
                      "s3",
                      "--lm_path",
                      "",
                      "A=1",
                      "env",
                      "-u",
                      "--rdzv_endpoint",
                      "[::1]",
                      ":",
                      "--ntasks",
                      "7",
                      "--tokenizer_path",
                      "--run_name",
                      "-"};
  std::mt19937 rng(31);
  for (int trial = 0; trial < 3000; ++trial) {
    Words words(std::uniform_int_distribution<size_t>(0, 12)(rng));
    for (auto& w : words) w = pickOne(rng, pool);
    const CmdlineImport im = importOpenFlamingoArgs(words);
    for (const auto& p : im.problems) EXPECT_FALSE(p.message.empty());
  }
}

}  // namespace
}  // namespace fs::protocol
