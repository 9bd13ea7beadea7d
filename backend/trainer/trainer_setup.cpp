// Trainer set-up: run directory, telemetry, the parts, model, optimizer,
// data, resume.
#include <torch/torch.h>
#include <unistd.h>
#ifdef FS_WITH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#endif

#include <cstdlib>
#include <random>
#include <thread>

#include "backend/launch/world_env.h"
#include "backend/model/shapes_only.h"
#include "backend/protocol/config/config_yaml.h"
#include "backend/protocol/wire/run_manifest.h"
#include "backend/runtime/heap_retention.h"
#include "backend/runtime/runtime_info.h"
#include "backend/step/seeding.h"
#include "backend/telemetry/memory_tracker.h"
#include "backend/telemetry/rank_log.h"
#include "backend/telemetry/stop_signals.h"
#include "backend/trainer/data_sources.h"
#include "backend/trainer/device_choice.h"
#include "backend/trainer/layout_event.h"
#include "backend/trainer/trainer_impl.h"

namespace fs::trainer {

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

std::string configHash(const protocol::RunConfig& config) {
  return fnv1aHex(protocol::dumpConfigYaml(config));
}

Placement placementOf(const protocol::RunConfig& config, const TrainerOptions& options) {
  Placement p;
  p.rank = options.rank;
  p.world = options.world;
  p.ranksPerNode = static_cast<int>(std::clamp<int64_t>(options.localWorld, 1, options.world));
  p.fsdp = config.parallel.mode == "fsdp";
  p.delayedInit = p.fsdp && config.parallel.delayed_init && p.distributed();
  p.shapesOnly = p.delayedInit && p.rank % p.ranksPerNode != 0;
  return p;
}

Trainer::Trainer(const protocol::RunConfig& config, std::filesystem::path runDir,
                 const TrainerOptions& options)
    : config_(config),
      dir_(std::move(runDir)),
      options_(options),
      place_(placementOf(config, options)),
      guard_(config.guard, config.checkpoint.every_steps) {}

Status Trainer::setUp() {
  // The figures of the world this run really has (the config's launch
  // section says how it was meant to be launched; a resume may use another).
  protocol::RunConfig sized = config_;
  sized.launch.nproc_per_node = place_.ranksPerNode;
  sized.launch.nnodes = options_.world / sized.launch.nproc_per_node;
  if (sized.worldSize() != options_.world) {
    return Status::invalidArgument("world size " + std::to_string(options_.world) + " is not a multiple of " +
                                   std::to_string(options_.localWorld) + " ranks per node");
  }
  figures_ = protocol::deriveFigures(sized);
  tokens_ = data::specialTokensFromConfig(config_.model.tokens);
  if (Status s = prepareRunDirectory(); !s) return s;
  if (Status s = telemetry::installCpuMemoryTracker(); !s) log_->warn("memory tracking off: {}", s.message());
  if (!runtime::retainFreedHeap()) log_->warn("malloc kept its defaults (NOTE [Retained heap])");
  if (config_.launch.threads_per_rank > 0) {
    at::set_num_threads(static_cast<int>(config_.launch.threads_per_rank));
  } else {
    const int cores = static_cast<int>(std::max<unsigned>(1, std::thread::hardware_concurrency()));
    const int ranksHere =
        static_cast<int>(options_.world > 1 ? std::max<int64_t>(1, options_.localWorld)
                                            : std::max<int64_t>(1, config_.launch.nproc_per_node));
    at::set_num_threads(std::max(1, cores / ranksHere));
  }
  log_->info("{} intra-op threads", at::get_num_threads());
  if (options_.installSignalHandlers) {
    if (Status s = telemetry::installStopSignals(); !s) return s;
  }
  // NOTE [Device choice] in device_choice.h: one device per rank, cuda:<local rank> on a GPU node.
  auto device =
      chooseDevice(config_.parallel.device, place_.rank % place_.ranksPerNode, currentDeviceFacts());
  if (!device) return device.status();
  device_ = options_.device.value_or(device.value());
#ifdef FS_WITH_CUDA
  // The rank's GPU is the current one from here on: NCCL and the caching allocator use it, and no
  // rank opens a context on cuda:0 by accident.
  if (device_.is_cuda()) c10::cuda::set_device(device_.index());
#endif
  log_->info("device: {} (parallel.device {})", device_.str(), config_.parallel.device);
  // NOTE [Device memory by phase] (telemetry/memory_tracker.h): the caching allocator's figures per
  // phase in the memory events; nothing on the CPU.
  telemetry::setDeviceMemoryReader(deviceMemoryReader(device_));
  auto policy = step::precisionPolicy(config_.optim.precision, device_);
  if (!policy) return policy.status();
  precision_ = policy.value();
  auto faults = faultPlanFromEnvironment(launch::currentEnvironment());
  if (!faults) return faults.status();
  faults_ = faults.value();
  protocol::WriteEnv* checkpointEnv =
      options_.checkpointWriteEnv ? options_.checkpointWriteEnv : options_.writeEnv;
  if (faults_.writeKillRank == options_.rank || faults_.writeFailRank == options_.rank) {
    protocol::FaultWriteEnv::Options f;
    const bool kill = faults_.writeKillRank == options_.rank;
    f.at = kill ? faults_.writeKillOp : faults_.writeFailOp;
    f.action = kill ? protocol::FaultWriteEnv::Action::kCrash : protocol::FaultWriteEnv::Action::kFail;
    faultWrites_ = std::make_unique<protocol::FaultWriteEnv>(protocol::writeEnvOr(checkpointEnv), f);
    checkpointEnv = faultWrites_.get();
  }
  if (Status s = joinWorld(); !s) return s;
  // The checkpointer, the reporter and the control loop exchange host tensors only: the host group (NOTE
  // [Host and device groups] in distributed/groups.h). A checkpoint's gathers of FSDP shards go through the
  // model's own group, taken from the device group (ShardedModel::shardGroup).
  checkpoint::CheckpointerOptions c;
  c.writeEnv = checkpointEnv;
  c.rank = options_.rank;
  c.world = options_.world;
  c.shapesOnly = place_.shapesOnly;
  c.optimizerStepsPerEpoch = figures_.optimizerStepsPerEpoch;
  c.schedulerSteps = figures_.schedulerSteps;
  checkpointer_ = std::make_unique<checkpoint::Checkpointer>(config_, dir_, tokens_, state_, groups_.host,
                                                             log_, emitter_.get(), c);
  if (config_.guard.enabled) checkpointer_->setGuardWindow(config_.guard.window);
  RankReporterOptions r;
  r.rank = options_.rank;
  r.world = options_.world;
  r.totalSteps = figures_.totalOptimizerSteps;
  r.onProgress = options_.onProgress;
  reporter_ = std::make_unique<RankReporter>(config_, state_, groups_.host, membership_.get(), log_,
                                             emitter_.get(), r);
  control_ = std::make_unique<ControlLoop>(options_.rank, groups_.host, place_.distributed(), dir_.root(),
                                           inbox_.get(), emitter_.get(), state_.counters, *checkpointer_,
                                           *reporter_, log_);
  log_->info("resident set before the model: {} bytes", telemetry::readProcessMemory().rss_bytes);
  if (Status s = buildModelAndOptimizer(); !s) return s;
  step::seedForRank(config_, options_.rank);
  auto sources = makeDataSources(config_, dir_.root(), options_.rank, options_.world, options_.makeSource);
  if (!sources) return sources.status();
  state_.source = std::move(sources->train);
  valSource_ = std::move(sources->val);
  plan_ = std::make_unique<step::StepPlan>(std::max<int64_t>(1, state_.source->stepsPerEpoch()),
                                           config_.optim.grad_accum_steps);
  if (Status s = resume(); !s) return s;
  if (Status s = agreeAfterSetUp(); !s) return s;
  if (Status s = place_.fsdp ? shardModel() : Status::ok(); !s) return s;
  // What start-up cost this process (bench/fsdp/startup_memory.sh reads it): under delayed init only
  // the first rank of each node ever holds the whole model.
  log_->info("start-up peak resident set: {} bytes{}", telemetry::readProcessMemory().peak_rss_bytes,
             place_.delayedInit ? (place_.shapesOnly ? " (delayed init: shards from the node's first rank)"
                                                     : " (delayed init: source for this node)")
                                : "");
  return Status::ok();
}

Status Trainer::prepareRunDirectory() {
  // NOTE [Stale commands] in control_inbox.h: this attempt starts before its
  // events.jsonl appears, so a command a client issues as soon as it sees that
  // file (before the inbox exists) is this attempt's, not a leftover. The run's
  // first attempt (no events.jsonl yet) has no earlier attempt to leave any: a
  // command issued between the launch and now (a pause right after an SSH or
  // SLURM launch) is acted on, so the inbox treats none as stale.
  std::int64_t attemptStartedMs = protocol::unixMillisNow();
  std::error_code ec;
  if (std::filesystem::file_size(dir_.root() / protocol::kEventsFileName, ec) == 0 || ec)
    attemptStartedMs = 0;
  if (Status s = dir_.create(options_.writeEnv); !s) return s;
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
      return Status::invalidArgument(
          configPath.string() +
          ": the run directory holds a different config; resume with that config or "
          "use a new run directory");
    }
  } else if (Status s = protocol::saveConfigFile(config_, configPath.string(), {}, protocol::kConfigFileMode);
             !s) {
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
  m.nproc_per_node = place_.ranksPerNode;
  m.nnodes = static_cast<int>(options_.world / m.nproc_per_node);
  // An SSH launcher writes run.json with its hosts before any rank exists; keep them when they
  // fit this world (a resumed run on another world forgets them).
  if (m.hosts.size() != static_cast<std::size_t>(m.nnodes)) m.hosts.clear();
  m.state = protocol::RunState::kStarting;
  m.pid = static_cast<int64_t>(::getpid());
  m.updated = protocol::unixMillisNow();
  // This start, with a node agent's restart count and reason (NOTE [Restarts], node_agent.h).
  protocol::recordAttempt(
      &m, protocol::attemptEnvironment([](const char* n) -> const char* { return std::getenv(n); }),
      m.updated);
  protocol::AtomicWriteOptions manifestWrite;
  manifestWrite.env = options_.writeEnv;
  if (Status s = protocol::writeManifest(dir_.root(), m, manifestWrite); !s) return s;
  auto emitterOptions = telemetry::EmitterOptions::fromConfig(config_.telemetry);
  emitterOptions.env = options_.writeEnv;
  auto emitter = telemetry::TelemetryEmitter::open(dir_, std::move(emitterOptions));
  if (!emitter) return emitter.status();
  emitter_ = std::move(emitter.value());
  inbox_ = std::make_unique<telemetry::ControlInbox>(dir_, *emitter_, attemptStartedMs, options_.writeEnv);
  return Status::ok();
}

Status Trainer::buildModelAndOptimizer() {
  step::seedForModelInit(config_);
  auto modelOptions = model::FlamingoOptions::fromConfig(config_.model);
  if (options_.disableDropout) modelOptions.lm().noDropout();
  model::Flamingo& model = state_.model;
  if (place_.shapesOnly) {
    // Delayed init: the node's first rank reads the weights and scatters each unit's shards (NOTE [FSDP in
    // the engine]).
    {
      model::ShapesOnlyScope shapes;
      model = model::Flamingo(modelOptions);
    }
    if (const auto bad = model::shapesOnlyProblem(*model); !bad.empty()) {
      return Status::unsupported(
          "delayed init: parameter " + bad +
          " was computed by an op at construction (NOTE [Shapes-only construction]); set "
          "parallel.delayed_init=false");
    }
  } else {
    model = model::Flamingo(modelOptions);
  }
  if (Status s = checkpointer_->importPretrained(); !s) return s;
  model->freezeAsOpenFlamingo();
  model->train();
  if (options_.initModel && !place_.shapesOnly) {
    if (Status s = options_.initModel(*model); !s) return s;
  }
  // Weights are built and imported on the host, then the model moves to the rank's device before the
  // optimizer (and FSDP's flat parameters, shardModel) see its parameters: their state follows them.
  // Module::to keeps each parameter's handle (set_data), so hooks and names stay valid. Shapes-only
  // ranks hold no values to move; FSDP places the shards it scatters to them.
  if (!device_.is_cpu() && !place_.shapesOnly) model->to(device_);
  for (const auto& [name, t] : model->namedParameters()) {
    if (t.requires_grad()) state_.trainable.push_back({name, t});
  }
  state_.optimizer = std::make_unique<step::GroupedAdamW>(state_.trainable, config_.optim);
  std::vector<double> baseLrs(state_.optimizer->groups().size(), config_.optim.lr);
  state_.schedule =
      std::make_unique<step::LrSchedule>(step::scheduleKindFromName(config_.optim.scheduler), baseLrs,
                                         config_.optim.warmup_steps, figures_.schedulerSteps);
  state_.schedule->apply(state_.optimizer->adamw());
  if (precision_.lossScaling || options_.lossScaling) {  // NOTE [Loss scaling in the step]
    step::GradScalerOptions scaling;
    scaling.initScale = options_.initialLossScale;
    state_.scaler = std::make_unique<step::GradScaler>(scaling);
  }
  log_->info("model built: {} parameters, {} trainable tensors", model->namedParameters().size(),
             state_.trainable.size());
  return Status::ok();
}

Status Trainer::resume() {
  auto resumed = checkpointer_->resume();
  if (!resumed) return resumed.status();
  if (resumed.value() == checkpoint::Resumed::kNo) return Status::ok();
  // NOTE [Gradient-flow check] in trainer_step.cpp: reported by the run that took the checkpoint. An
  // OpenFlamingo checkpoint comes without that run: its first step here checks.
  if (resumed.value() == checkpoint::Resumed::kCheckpoint) {
    gradientFlowChecked_ = true;
    structureChecked_ = true;
  }
  reporter_->countResumed(state_.counters.iteration);
  return Status::ok();
}

void Trainer::emitStartEvents() {
  protocol::RunStartedEvent started;
  started.run_id = runId_;
  started.engine_version = runtime::engineVersion();
  started.world_size = static_cast<int>(options_.world);
  started.nnodes = static_cast<int>(options_.world / place_.ranksPerNode);
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
  emit(layoutEvent(*state_.model, state_.sharded.get(), config_.parallel.limit_all_gathers, options_.world));
}

}  // namespace fs::trainer
