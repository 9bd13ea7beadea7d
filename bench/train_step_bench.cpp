// bench_train_step: median time of one training iteration of our engine on a
// preset (tiny | small), one process, N intra-op threads. The iteration is
// exactly Trainer::trainIteration + Trainer::optimizerStep
// (backend/trainer/trainer_step.cpp), built from the same library calls:
//   per dataset: labels, forward (memory phase + autocast scope), causalLmLoss,
//   loss.item(), backward of loss * loss_multiplier / window;
//   then embedding-gradient row mask, clipGradNorm, schedule.apply, AdamW step,
//   schedule.step, zero_grad(set_to_none).
// Batches come from the SyntheticSource, generated before the timed loop (the
// engine's data_time_s is reported separately by the trainer; here we time the
// compute only). The CPU memory tracker is installed as the trainer does
// (--no-memory-tracker to measure its cost). Padding is skipped as the trainer
// skips it (NOTE [Skipped padding] in backend/model/common.h);
// --compute-padding computes it, and every position's logits, as the reference does
// (NOTE [Logits at the targets] in backend/model/output_head.h).
// Telemetry: per step a StepEvent is built as RankReporter::reportStep does and
// emitted on a TelemetryEmitter over a temporary run directory; both the build
// (gate values included) and the emit() call are timed.
//
// Usage: bench_train_step PRESET|CONFIG.yaml [THREADS=1] [WARMUP=5] [ITERS=30] [--no-memory-tracker]
// [--compute-padding] [--per-step]
//                        [--profile=TRACE.json] [--units] [--device=cpu|cuda] [--set=KEY=VALUE]...
//                        [--pool=N]
// --units: per-unit forward and backward times (bench/unit_timer.h).
// --device=cuda: the model on cuda:0 and each batch copied there as the trainer
// does (data::toDevice after the host-side decisions: labels, target count,
// padding, index sets); the step ends with a device synchronize, so its time
// is the device's (the CPU memory tracker is off). bench/run_gpu.sh.
// --set: config overrides as flamingo-train's (e.g. optim.precision=amp_bf16).
// --pool: synthetic steps generated before the loop (default 16).
#include <time.h>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/cuda.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backend/data/batch.h"
#include "backend/data/special_tokens.h"
#include "backend/data/synthetic_source.h"
#include "backend/model/common.h"
#include "backend/model/flamingo.h"
#include "backend/protocol/config/config_override.h"
#include "backend/protocol/config/config_yaml.h"
#include "backend/protocol/config/derived.h"
#include "backend/protocol/problem.h"
#include "backend/protocol/wire/events.h"
#include "backend/protocol/wire/run_dir.h"
#include "backend/runtime/heap_retention.h"
#include "backend/step/grad_clip.h"
#include "backend/step/labels.h"
#include "backend/step/loss.h"
#include "backend/step/optimizer.h"
#include "backend/step/precision.h"
#include "backend/step/schedule.h"
#include "backend/step/seeding.h"
#include "backend/telemetry/emitter.h"
#include "backend/telemetry/memory_tracker.h"
#include "backend/trainer/device_batch.h"
#include "unit_timer.h"

#ifndef FS_SOURCE_DIR
#define FS_SOURCE_DIR "."
#endif

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// CPU time of the calling thread, in seconds: with one intra-op thread, the
// step's work, whatever else the machine runs (wall time is not, on a shared
// 2-core VM).
double threadCpuSeconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "bench_train_step: %s\n", message.c_str());
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace fs;
  std::vector<std::string> args;
  bool memoryTracker = true;
  bool skipPadding = true;
  bool perStep = false;
  bool units = false;
  std::string profilePath;
  std::string deviceName = "cpu";
  std::vector<std::string> sets;
  int64_t poolMax = 16;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--no-memory-tracker") {
      memoryTracker = false;
    } else if (a == "--compute-padding") {
      skipPadding = false;
    } else if (a == "--units") {
      units = true;
    } else if (a == "--per-step") {
      perStep = true;
    } else if (a.rfind("--profile=", 0) == 0) {
      profilePath = a.substr(10);
    } else if (a.rfind("--device=", 0) == 0) {
      deviceName = a.substr(9);
    } else if (a.rfind("--set=", 0) == 0) {
      sets.push_back(a.substr(6));
    } else if (a.rfind("--pool=", 0) == 0) {
      poolMax = std::atoll(a.substr(7).c_str());
    } else {
      args.push_back(a);
    }
  }
  const std::string preset = args.size() > 0 ? args[0] : "tiny";
  const int threads = args.size() > 1 ? std::atoi(args[1].c_str()) : 1;
  const int warmup = args.size() > 2 ? std::atoi(args[2].c_str()) : 5;
  const int iters = args.size() > 3 ? std::atoi(args[3].c_str()) : 30;
  if (threads < 1 || warmup < 0 || iters < 1) die("bad THREADS / WARMUP / ITERS");
  if (poolMax < 1) die("bad --pool");
  if (deviceName != "cpu" && deviceName != "cuda") die("--device is cpu or cuda, not '" + deviceName + "'");
  const bool cuda = deviceName == "cuda";
  if (cuda && !torch::cuda::is_available()) die("--device=cuda: no usable CUDA device");
  if (cuda) memoryTracker = false;  // the CPU allocator's tracker: nothing to see on a GPU

  // Before any torch work.
  at::set_num_interop_threads(1);
  at::set_num_threads(threads);

  const std::string path = preset.find(".yaml") != std::string::npos
                               ? preset
                               : std::string(FS_SOURCE_DIR) + "/resources/presets/" + preset + ".yaml";
  auto load = protocol::loadConfigFile(path);
  if (!load.ok()) die(path + ": " + protocol::formatProblems(load.problems));
  protocol::RunConfig config = load.config;
  if (const auto problems = protocol::applyOverrides(&config, sets); !problems.empty())
    die("--set: " + protocol::formatProblems(problems));
  if (config.data.datasets.empty()) die("no datasets in " + path);

  if (memoryTracker) {
    if (auto s = telemetry::installCpuMemoryTracker(); !s) die("memory tracker: " + s.message());
  }
  runtime::retainFreedHeap();  // as Trainer::setUp (NOTE [Retained heap])
  const torch::Device device = cuda ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
  auto policy = step::precisionPolicy(config.optim.precision, device);
  if (!policy) die(policy.status().message());
  const step::PrecisionPolicy precision = policy.value();
  const bool compat = config.compat == "openflamingo";
  const auto figures = protocol::deriveFigures(config);
  const data::SpecialTokenIds tokens = data::specialTokensFromConfig(config.model.tokens);

  // ---- model, optimizer, schedule: Trainer::buildModelAndOptimizer
  step::seedForModelInit(config);
  model::Flamingo model(model::FlamingoOptions::fromConfig(config.model));
  model->freezeAsOpenFlamingo();
  model->train();
  if (cuda) model->to(device);  // Trainer::buildModelAndOptimizer: before the optimizer sees the parameters
  std::vector<step::NamedParameter> trainable;
  int64_t trainableCount = 0, totalCount = 0;
  for (const auto& [name, t] : model->namedParameters()) {
    totalCount += t.numel();
    if (t.requires_grad()) {
      trainable.push_back({name, t});
      trainableCount += t.numel();
    }
  }
  step::GroupedAdamW optimizer(trainable, config.optim);
  std::vector<double> baseLrs(optimizer.groups().size(), config.optim.lr);
  step::LrSchedule schedule(step::scheduleKindFromName(config.optim.scheduler), baseLrs,
                            config.optim.warmup_steps, figures.schedulerSteps);
  schedule.apply(optimizer.adamw());

  std::shared_ptr<bench::UnitTimer> unitTimer;
  if (units) {
    std::map<const torch::nn::Module*, std::string> names;
    for (const auto& item : model->named_modules()) names[item.value().get()] = item.key();
    unitTimer = std::make_shared<bench::UnitTimer>(std::move(names));
    model->setUnitHooks(unitTimer);
  }

  // ---- data: Trainer::setUp
  step::seedForRank(config, 0);
  auto created = data::SyntheticSource::create(config, 0, 1);
  if (!created) die(created.status().message());
  auto source = std::move(created.value());
  std::vector<data::StepBatches> pool;
  const int64_t poolSize = std::min<int64_t>(poolMax, std::max<int64_t>(1, source->stepsPerEpoch()));
  while (static_cast<int64_t>(pool.size()) < poolSize) {
    auto next = source->next();
    if (!next) die(next.status().message());
    if (!next.value()) {
      source->setEpoch(source->epoch() + 1);
      continue;
    }
    pool.push_back(std::move(*next.value()));
  }
  int64_t samplesPerStep = 0;
  std::string shapes;
  for (const auto& b : pool.front().batches) {
    samplesPerStep += b.samples;
    shapes +=
        " " + b.dataset + ":ids" + c10::str(b.inputIds.sizes()) + ",images" + c10::str(b.images.sizes());
  }

  // ---- telemetry: an emitter over a temporary run directory
  const auto tmp = std::filesystem::temp_directory_path() /
                   ("fs-bench-train-step-" + std::to_string(static_cast<long>(::getpid())));
  std::filesystem::remove_all(tmp);
  protocol::RunDir runDir(tmp);
  if (auto s = runDir.create(); !s) die(s.message());
  auto opened =
      telemetry::TelemetryEmitter::open(runDir, telemetry::EmitterOptions::fromConfig(config.telemetry));
  if (!opened) die(opened.status().message());
  auto emitter = std::move(opened.value());

  std::vector<double> stepT, cpuT, fwdT, bwdT, optT, buildT, emitT;
  std::map<std::string, int64_t> samplesSeen, tokensSeen;
  int64_t step = 0;
  double lastLoss = 0;
  const double window = static_cast<double>(std::max<int64_t>(1, config.optim.grad_accum_steps));
  std::unique_ptr<torch::autograd::profiler::RecordProfile> profile;
  for (int it = 0; it < warmup + iters; ++it) {
    // The timed iterations only, written as a Chrome trace on exit.
    if (it == warmup && !profilePath.empty())
      profile = std::make_unique<torch::autograd::profiler::RecordProfile>(profilePath);
    const data::StepBatches& batches = pool[static_cast<size_t>(it) % pool.size()];
    double fwd = 0, bwd = 0, opt = 0;
    std::map<std::string, double> losses;
    std::optional<double> gradNorm;
    const auto t0 = Clock::now();
    const double c0 = threadCpuSeconds();
    // ---- Trainer::trainIteration
    for (size_t i = 0; i < batches.batches.size(); ++i) {
      const data::Batch& b = batches.batches[i];
      const protocol::DatasetConfig& cfg = config.data.datasets.at(i);
      const auto tf = Clock::now();
      const torch::Tensor hostLabels = step::makeLabels(b.kind, b.inputIds, tokens);
      step::LmLoss loss;
      {
        telemetry::MemoryPhase phase(telemetry::Phase::kActivations);
        // As Trainer::forwardLoss: the host-side decisions, then the batch to the device.
        const trainer::DeviceBatch d = trainer::toDeviceForForward(
            *model, b, hostLabels, tokens.pad, config.model.lm.width, compat, device, skipPadding);
        step::AutocastScope autocast(precision, device);
        loss = trainer::forwardLossOn(*model, d, precision.inputDtype);
      }
      if (loss.noTargets) die("a batch without supervised tokens");
      const double value = loss.loss.item<double>();
      if (!std::isfinite(value)) die("non-finite loss");
      losses[b.dataset] = value;
      lastLoss = value;
      fwd += since(tf);
      const auto tb = Clock::now();
      telemetry::MemoryPhase phase(telemetry::Phase::kGradients);
      (loss.loss * (cfg.loss_multiplier / window)).backward();
      if (unitTimer) unitTimer->backwardDone();
      bwd += since(tb);
    }
    // ---- Trainer::optimizerStep (gradient-flow check aside: a first-step diagnostic)
    {
      const auto to = Clock::now();
      telemetry::MemoryPhase phase(telemetry::Phase::kOptimizer);
      if (!config.model.freeze_lm_embeddings) model->maskEmbeddingGradient();
      const step::ClipResult clip =
          step::clipGradNorm(optimizer.parameters(), step::ClipOptions{config.optim.max_grad_norm});
      if (!clip.finite) die("non-finite gradient norm");
      gradNorm = clip.norm;
      schedule.apply(optimizer.adamw());
      optimizer.step();
      schedule.step();
      optimizer.zeroGrad(true);
      ++step;
      if (cuda) torch::cuda::synchronize();  // the step's time is the device's
      opt = since(to);
    }
    const double stepTime = since(t0);
    const double stepCpu = threadCpuSeconds() - c0;

    // ---- RankReporter::reportStep's StepEvent
    const auto te = Clock::now();
    protocol::StepEvent e;
    e.step = step;
    e.epoch = 0;
    for (const auto& b : batches.batches) {
      e.samples[b.dataset] = (samplesSeen[b.dataset] += b.samples);
      e.tokens[b.dataset] = (tokensSeen[b.dataset] += b.tokens);
      e.samples_per_s[b.dataset] = b.samples / stepTime;
    }
    e.loss = losses;
    for (const auto& [name, l] : losses) e.rank_loss[name] = {l};
    e.lr = optimizer.adamw().param_groups().front().options().get_lr();
    e.grad_norm = gradNorm;
    e.step_time_s = stepTime;
    for (const auto& g : model->gateValues()) e.gates.push_back({static_cast<int>(g.layer), g.attn, g.ff});
    const double build = since(te);
    const auto tq = Clock::now();
    emitter->emit(e);
    const double emit = since(tq);

    if (perStep) {
      std::printf("step %d batch %zu real_tokens", it, static_cast<size_t>(it) % pool.size());
      for (const auto& b : batches.batches)
        std::printf(" %s=%lld", b.dataset.c_str(),
                    static_cast<long long>(b.attentionMask.sum().item<int64_t>()));
      std::printf(" fwd_ms=%.2f bwd_ms=%.2f opt_ms=%.2f step_ms=%.2f\n", fwd * 1e3, bwd * 1e3, opt * 1e3,
                  stepTime * 1e3);
    }
    if (unitTimer) it >= warmup ? unitTimer->stepDone() : unitTimer->discardStep();
    if (it >= warmup) {
      stepT.push_back(stepTime);
      cpuT.push_back(stepCpu);
      fwdT.push_back(fwd);
      bwdT.push_back(bwd);
      optT.push_back(opt);
      buildT.push_back(build);
      emitT.push_back(emit);
    }
  }
  profile.reset();
  if (auto s = emitter->close(); !s) die("emitter close: " + s.message());
  const auto written = emitter->stats().written;
  emitter.reset();
  std::filesystem::remove_all(tmp);

  const double med = median(stepT);
  const double telem = median(buildT) + median(emitT);
  std::printf("config %s: params %lld (trainable %lld), samples/step %lld,%s\n", path.c_str(),
              static_cast<long long>(totalCount), static_cast<long long>(trainableCount),
              static_cast<long long>(samplesPerStep), shapes.c_str());
  std::printf("breakdown median ms: forward+loss %.3f  backward %.3f  optimizer %.3f  (memory tracker %s)\n",
              median(fwdT) * 1e3, median(bwdT) * 1e3, median(optT) * 1e3, memoryTracker ? "on" : "off");
  std::printf("telemetry median us: build StepEvent %.1f  emit() %.1f  (%llu lines written)\n",
              median(buildT) * 1e6, median(emitT) * 1e6, static_cast<unsigned long long>(written));
  std::printf(
      "ours preset=%s device=%s precision=%s threads=%d warmup=%d iters=%d median_step_ms=%.3f "
      "min_step_ms=%.3f "
      "max_step_ms=%.3f samples_per_s=%.2f main_thread_cpu_ms=%.3f telemetry_us=%.1f telemetry_pct=%.4f "
      "last_loss=%.4f\n",
      preset.c_str(), deviceName.c_str(), config.optim.precision.c_str(), threads, warmup, iters, med * 1e3,
      *std::min_element(stepT.begin(), stepT.end()) * 1e3,
      *std::max_element(stepT.begin(), stepT.end()) * 1e3, samplesPerStep / med, median(cpuT) * 1e3,
      telem * 1e6, 100.0 * telem / med, lastLoss);
  if (unitTimer) unitTimer->print(stdout);
  return 0;
}
