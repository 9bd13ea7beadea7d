// Trainer set-up: run directory, telemetry, model, optimizer, data, resume.
#include <torch/torch.h>


#include <random>
#include <set>
#include <thread>
#include <unistd.h>

#include "backend/data/synthetic_source.h"
#include "backend/checkpoint/checkpoint_manifest.h"
#include "backend/trainer/trainer_impl.h"
#include "backend/checkpoint/weights.h"
#include "backend/model/shapes_only.h"
#include "backend/launch/world_env.h"
#include "backend/protocol/config_yaml.h"
#include "backend/protocol/run_manifest.h"
#include "backend/runtime/runtime_info.h"
#include "backend/telemetry/memory_tracker.h"
#include "backend/telemetry/rank_log.h"
#include "backend/telemetry/stop_signals.h"
#include "backend/train/seeding.h"

namespace fs::engine {

using protocol::Status;

namespace {

std::string fnv1aHex(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string newRunId(const std::string& name) {
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::gmtime(&now));
  std::random_device rd;
  char suffix[8];
  std::snprintf(suffix, sizeof suffix, "%04x", rd() & 0xffff);
  return name + "-" + stamp + "-" + suffix;
}

}  // namespace

// torch's Python spelling ("float32"), as the telemetry schema documents.
std::string dtypeName(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Float: return "float32";
    case c10::ScalarType::BFloat16: return "bfloat16";
    case c10::ScalarType::Half: return "float16";
    case c10::ScalarType::Double: return "float64";
    default: return c10::toString(t);
  }
}

std::string configHash(const protocol::RunConfig& config) { return fnv1aHex(protocol::dumpConfigYaml(config)); }

Trainer::Trainer(const protocol::RunConfig& config, std::filesystem::path runDir, const TrainerOptions& options)
    : config_(config), dir_(std::move(runDir)), options_(options) {}

Status Trainer::setUp() {
  // The figures of the world this run really has (the config's launch
  // section says how it was meant to be launched; a resume may use another).
  protocol::RunConfig sized = config_;
  sized.launch.nproc_per_node = ranksPerNode();
  sized.launch.nnodes = options_.world / sized.launch.nproc_per_node;
  if (sized.worldSize() != options_.world) {
    return Status::invalidArgument("world size " + std::to_string(options_.world) + " is not a multiple of " +
                                   std::to_string(options_.localWorld) + " ranks per node");
  }
  figures_ = protocol::deriveFigures(sized);
  tokens_ = data::specialTokensFromConfig(config_.model.tokens);
  if (Status s = prepareRunDirectory(); !s) return s;
  if (Status s = telemetry::installCpuMemoryTracker(); !s) log_->warn("memory tracking off: {}", s.message());
  if (config_.launch.threads_per_rank > 0) {
    at::set_num_threads(static_cast<int>(config_.launch.threads_per_rank));
  } else {
    const int cores = static_cast<int>(std::max<unsigned>(1, std::thread::hardware_concurrency()));
    const int ranksHere = static_cast<int>(options_.world > 1 ? std::max<int64_t>(1, options_.localWorld)
                                                              : std::max<int64_t>(1, config_.launch.nproc_per_node));
    at::set_num_threads(std::max(1, cores / ranksHere));
  }
  log_->info("{} intra-op threads", at::get_num_threads());
  if (options_.installSignalHandlers) {
    if (Status s = telemetry::installStopSignals(); !s) return s;
  }
  auto policy = train::precisionPolicy(config_.optim.precision, device_);
  if (!policy) return policy.status();
  precision_ = policy.value();
  auto faults = faultPlanFromEnvironment(launch::currentEnvironment());
  if (!faults) return faults.status();
  faults_ = faults.value();
  if (Status s = joinWorld(); !s) return s;
  log_->info("resident set before the model: {} bytes", telemetry::readProcessMemory().rss_bytes);
  if (Status s = buildModelAndOptimizer(); !s) return s;
  train::seedForRank(config_, options_.rank);
  if (options_.makeSource) {
    auto source = options_.makeSource();
    if (!source) return source.status();
    source_ = std::move(source.value());
  } else if (config_.data.source == "shards" || config_.data.source == "generated") {
    if (Status s = makeShardSources(); !s) return s;
  } else {
    auto source = data::SyntheticSource::create(config_, options_.rank, options_.world);
    if (!source) return source.status();
    source_ = std::move(source.value());
  }
  plan_ = std::make_unique<train::StepPlan>(std::max<int64_t>(1, source_->stepsPerEpoch()),
                                            config_.optim.grad_accum_steps);
  if (Status s = resumeIfPossible(); !s) return s;
  if (Status s = agreeAfterSetUp(); !s) return s;
  if (Status s = fsdp() ? shardModel() : Status::ok(); !s) return s;
  // What start-up cost this process (bench/fsdp/startup_memory.sh reads it): under delayed init only
  // the first rank of each node ever holds the whole model.
  log_->info("start-up peak resident set: {} bytes{}", telemetry::readProcessMemory().peak_rss_bytes,
             delayedInit() ? (shapesOnly() ? " (delayed init: shards from the node's first rank)"
                                           : " (delayed init: source for this node)")
                           : "");
  return Status::ok();
}

Status Trainer::prepareRunDirectory() {
  // NOTE [Stale commands] in control_inbox.h: this attempt starts before its
  // events.jsonl appears, so a command a client issues as soon as it sees that
  // file (before the inbox exists) is this attempt's, not a leftover.
  const std::int64_t attemptStartedMs = protocol::unixMillisNow();
  if (Status s = dir_.create(); !s) return s;
  telemetry::RankLogOptions logOptions;
  logOptions.stderr_level = options_.logInfoToStderr ? spdlog::level::info : spdlog::level::warn;
  auto log = telemetry::openRankLog(dir_, static_cast<int>(options_.rank), logOptions);
  if (!log) return log.status();
  log_ = log.value();
  if (options_.rank != 0) return Status::ok();  // rank 0 owns config.yaml, run.json, events and control
  const auto configPath = dir_.root() / protocol::kConfigFileName;
  if (std::filesystem::exists(configPath)) {
    auto existing = protocol::loadConfigFile(configPath.string());
    if (!existing.ok()) return Status::invalidArgument(protocol::formatProblems(existing.problems));
    // The launch section may change between attempts (resume on another world size).
    protocol::RunConfig before = existing.config;
    before.launch = config_.launch;
    if (before != config_) {
      return Status::invalidArgument(configPath.string() +
                                     ": the run directory holds a different config; resume with that config or "
                                     "use a new run directory");
    }
  } else if (Status s = protocol::saveConfigFile(config_, configPath.string()); !s) {
    return s;
  }
  protocol::RunManifest m;
  if (auto old = protocol::readManifest(dir_.root())) {
    m = old.value();
  } else {
    m.run_id = newRunId(config_.name);
    m.created = protocol::unixMillisNow();
  }
  runId_ = m.run_id;
  m.engine_version = runtime::engineVersion();
  m.world_size = static_cast<int>(options_.world);
  m.nproc_per_node = ranksPerNode();
  m.nnodes = static_cast<int>(options_.world / m.nproc_per_node);
  m.hosts.clear();
  m.state = protocol::RunState::kStarting;
  m.pid = static_cast<int64_t>(::getpid());
  m.updated = protocol::unixMillisNow();
  if (Status s = protocol::writeManifest(dir_.root(), m); !s) return s;
  auto emitter = telemetry::TelemetryEmitter::open(dir_, telemetry::EmitterOptions::fromConfig(config_.telemetry));
  if (!emitter) return emitter.status();
  emitter_ = std::move(emitter.value());
  inbox_ = std::make_unique<telemetry::ControlInbox>(dir_, *emitter_, attemptStartedMs);
  return Status::ok();
}

Status Trainer::buildModelAndOptimizer() {
  train::seedForModelInit(config_);
  auto modelOptions = model::FlamingoOptions::fromConfig(config_.model);
  if (options_.disableDropout) modelOptions.lm().noDropout();
  if (shapesOnly()) {
    // Delayed init: the node's first rank reads the weights and scatters each unit's shards (NOTE [FSDP in
    // the engine]).
    {
      model::ShapesOnlyScope shapes;
      model_ = model::Flamingo(modelOptions);
    }
    if (const auto bad = model::shapesOnlyProblem(*model_); !bad.empty()) {
      return Status::unsupported("delayed init: parameter " + bad +
                              " was computed by an op at construction (NOTE [Shapes-only construction]); set "
                              "parallel.delayed_init=false");
    }
  } else {
    model_ = model::Flamingo(modelOptions);
  }
  if (!shapesOnly() && (!config_.model.lm.path.empty() || !config_.model.vision.pretrained.empty())) {
    auto loaded = loadPretrained(*model_, config_.model);
    if (!loaded) return loaded.status();
    for (const auto& line : loaded->info) log_->info("{}", line);
    for (const auto& w : loaded->warnings) {
      log_->warn("{}", w);
      emit(protocol::WarningEvent{"pretrained_unexpected_keys", w, static_cast<int>(options_.rank)});
    }
  }
  model_->freezeAsOpenFlamingo();
  model_->train();
  if (options_.initModel && !shapesOnly()) {
    if (Status s = options_.initModel(*model_); !s) return s;
  }
  for (const auto& [name, t] : model_->namedParameters()) {
    if (t.requires_grad()) trainable_.push_back({name, t});
  }
  optimizer_ = std::make_unique<train::GroupedAdamW>(trainable_, config_.optim);
  std::vector<double> baseLrs(optimizer_->groups().size(), config_.optim.lr);
  schedule_ = std::make_unique<train::LrSchedule>(train::scheduleKindFromName(config_.optim.scheduler), baseLrs,
                                                  config_.optim.warmup_steps, figures_.schedulerSteps);
  schedule_->apply(optimizer_->adamw());
  log_->info("model built: {} parameters, {} trainable tensors", model_->namedParameters().size(), trainable_.size());
  return Status::ok();
}

// Frozen weights are not in a checkpoint (OpenFlamingo's filter): they are
// expected-frozen; a missing trainable one, an unexpected or a mis-shaped key
// is an error.
Status Trainer::checkResumeLoad(model::LoadReport report, const std::string& where) const {
  std::set<std::string> trainable;
  for (const auto& p : trainable_) trainable.insert(p.name);
  report.markExpectedFrozen([&](const std::string& name) { return trainable.count(name) == 0; });
  if (!report.ok()) {
    return Status::invalidArgument(where + ": " + report.summary() +
                                   (report.mismatched.empty() ? "" : " (wrong base model or model shape?)"));
  }
  log_->info("{}: {}", where, report.summary());
  return Status::ok();
}

Status Trainer::resumeIfPossible() {
  if (!config_.checkpoint.resume_from.empty()) {
    const std::filesystem::path path = config_.checkpoint.resume_from;
    auto ck = readCheckpoint(path);
    if (ck) {
      if (Status s = verifyCheckpointManifest(ck->resume.manifest, ck->modelState, path); !s) return s;
      return resumeFrom(ck.value(), path);
    }
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) return ck.status();  // sharded: never an OpenFlamingo file
    // Not ours (no 'flamingo_studio' key, or a plain Python torch.save dict
    // LibTorch cannot read): try it as an OpenFlamingo checkpoint.
    auto foreign = readForeignCheckpoint(path.string());
    if (foreign && !foreign->hasFlamingoStudioKey) return resumeFromOpenFlamingo(foreign.value(), path);
    if (!foreign && foreign.status().code() != Status::Code::kCorruption &&
        foreign.status().code() != Status::Code::kUnsupported) {
      return foreign.status();
    }
    return ck.status();
  }
  // Newest first; only the checkpoint actually used is read in full.
  std::vector<std::string> skipped;
  std::optional<CheckpointContents> chosen;
  std::filesystem::path chosenPath;
  for (const auto& candidate : checkpointCandidates(dir_.root(), &skipped)) {
    auto ck = readCheckpoint(candidate);
    if (ck) {
      if (Status s = verifyCheckpointManifest(ck->resume.manifest, ck->modelState, candidate); !s) {
        skipped.push_back(s.message());
        continue;
      }
      chosen = std::move(ck.value());
      chosenPath = candidate;
      break;
    }
    skipped.push_back(ck.status().message());
  }
  for (const auto& s : skipped) {
    log_->warn("skipping checkpoint: {}", s);
    emit(protocol::WarningEvent{"checkpoint_skipped", s, static_cast<int>(options_.rank)});
  }
  return chosen ? resumeFrom(*chosen, chosenPath) : Status::ok();
}

Status Trainer::resumeFromOpenFlamingo(const ForeignCheckpoint& foreign, const std::filesystem::path& path) {
  const std::string where = path.string();
  if (!shapesOnly()) {  // as in resumeFrom
    if (Status s = checkResumeLoad(model_->loadStateDict(foreign.model), where); !s) return s;
  }
  auto warn = [&](const std::string& code, const std::string& message) {
    log_->warn("{}", message);
    emit(protocol::WarningEvent{code, message, static_cast<int>(options_.rank)});
  };
  for (const auto& note : foreign.notes) warn("openflamingo_resume_state", where + ": " + note);
  epoch_ = foreign.epoch ? *foreign.epoch + 1 : 0;  // OpenFlamingo continues after the saved epoch
  stepInEpoch_ = 0;
  iteration_ = epoch_ * source_->stepsPerEpoch();
  step_ = epoch_ * figures_.optimizerStepsPerEpoch;
  bool optimizerLoaded = false;
  if (foreign.optimizer) {
    if (Status s = optimizer_->loadStateDict(*foreign.optimizer); s) {
      optimizerLoaded = true;
    } else {
      warn("openflamingo_optimizer_state",
           where + ": optimizer state not loaded (" + s.message() + "); starting with a fresh optimizer");
      optimizer_ = std::make_unique<train::GroupedAdamW>(trainable_, config_.optim);
    }
  } else {
    warn("openflamingo_optimizer_state", where + ": no optimizer state in it; starting with a fresh optimizer");
  }
  bool schedulerLoaded = false;
  if (optimizerLoaded && foreign.scheduler) {
    if (Status s = schedule_->loadStateDict(*foreign.scheduler); s) {
      schedulerLoaded = true;
      step_ = foreign.scheduler->lastEpoch;  // LambdaLR's last_epoch counts optimizer steps
    } else {
      warn("openflamingo_scheduler_state", where + ": lr scheduler state not loaded (" + s.message() + ")");
    }
  }
  if (!schedulerLoaded) {
    // Continue the schedule where epoch+1 starts.
    std::vector<double> baseLrs(optimizer_->groups().size(), config_.optim.lr);
    schedule_ = std::make_unique<train::LrSchedule>(train::scheduleKindFromName(config_.optim.scheduler), baseLrs,
                                                    config_.optim.warmup_steps, figures_.schedulerSteps);
    train::LrSchedulerStateDict at;
    at.baseLrs = baseLrs;
    at.lastEpoch = step_;
    (void)schedule_->loadStateDict(at);
  }
  schedule_->apply(optimizer_->adamw());
  for (const auto& d : config_.data.datasets) samplesSeen_[d.name] = iteration_ * d.batch_size * options_.world;
  warn("openflamingo_resume",
       "resumed from an OpenFlamingo checkpoint: data position and RNG state are not in it (" + where +
           ", continuing at epoch " + std::to_string(epoch_) + ")");
  log_->info("resumed from OpenFlamingo checkpoint {} at epoch {}, optimizer step {}", where, epoch_, step_);
  return Status::ok();
}

Status Trainer::resumeFrom(const CheckpointContents& ck, const std::filesystem::path& path) {
  // A shapes-only rank takes its values from its node's first rank (NOTE [Values from the node's first
  // rank]): writing the checkpoint into its parameters would only make them resident.
  if (!shapesOnly()) {
    std::map<std::string, torch::Tensor> state(ck.modelState.begin(), ck.modelState.end());
    if (Status s = checkResumeLoad(model_->loadStateDict(state), path.string()); !s) return s;
  }
  if (Status s = optimizer_->loadStateDict(ck.optimizer); !s) return s;
  if (Status s = schedule_->loadStateDict(ck.scheduler); !s) return s;
  schedule_->apply(optimizer_->adamw());
  if (Status s = restoreDataPosition(ck.resume.data); !s) return s;
  // The saved generator state is rank 0's; other ranks continue from their
  // own seed (NOTE [Seeding]), so dropout differs per rank as it should.
  if (options_.rank == 0) {
    if (Status s = train::restoreRng(ck.resume.rng); !s) return s;
  }
  step_ = ck.resume.step;
  iteration_ = ck.resume.iteration;
  epoch_ = ck.resume.data.epoch;
  stepInEpoch_ = iteration_ - epoch_ * source_->stepsPerEpoch();
  const auto& savedSizes = ck.resume.data.batchSizes;
  if (ck.resume.data.world != options_.world ||
      (!savedSizes.empty() && savedSizes != source_->position().batchSizes)) {
    const auto consumed = source_->position().batchesConsumed;
    stepInEpoch_ = consumed.empty() ? 0 : *std::min_element(consumed.begin(), consumed.end());
    iteration_ = epoch_ * source_->stepsPerEpoch() + stepInEpoch_;
  }
  gradientFlowChecked_ = true;
  structureChecked_ = true;
  for (const auto& d : config_.data.datasets) samplesSeen_[d.name] = iteration_ * d.batch_size * options_.world;
  log_->info("resumed from {} at epoch {}, iteration {}, optimizer step {}", path.string(), epoch_, iteration_, step_);
  return Status::ok();
}

void Trainer::emitStartEvents() {
  protocol::RunStartedEvent started;
  started.run_id = runId_;
  started.engine_version = runtime::engineVersion();
  started.world_size = static_cast<int>(options_.world);
  started.nnodes = static_cast<int>(options_.world / ranksPerNode());
  if (membership_) {
    for (const auto& p : membership_->peers()) {
      if (std::find(started.hosts.begin(), started.hosts.end(), p.host) == started.hosts.end())
        started.hosts.push_back(p.host);
    }
  }
  started.config_hash = configHash(config_);
  started.total_steps = figures_.totalOptimizerSteps;
  started.steps_per_epoch = figures_.optimizerStepsPerEpoch;
  for (const auto& d : config_.data.datasets) started.datasets.push_back(d.name);
  emit(started);
  if (sharded_) {
    emit(shardedLayout());
    return;
  }
  // Without FSDP one unit: the whole model on every rank.
  protocol::LayoutUnit unit;
  unit.path = "";
  for (const auto& [name, t] : model_->namedParameters()) {
    unit.param_count += t.numel();
    if (!t.requires_grad()) unit.frozen_params += t.numel();
    unit.dtype = dtypeName(t.scalar_type());
  }
  unit.trainable = unit.frozen_params < unit.param_count;
  unit.shard_bytes.assign(static_cast<size_t>(options_.world), unit.param_count * 4);
  emit(protocol::LayoutEvent{{unit}, 0});
}

}  // namespace fs::engine
