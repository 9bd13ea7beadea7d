// The training loop's telemetry, one rank's side of it.
//
// NOTE [Per-rank figures]: a step's per-rank figures (per dataset loss,
// step, data and wait time, the memory breakdown) are only known when the
// step is over, so they ride on the next iteration's opening agreement
// rather than costing a collective of their own between steps; rank 0
// writes the step event (and the memory event) once they arrived. Before a
// pause, while a rank waits for data (NOTE [Waiting for data] in
// trainer.cpp) and at the end of the run, flush() gathers them at once. Whether a
// report is pending depends only on the step number, so every rank passes
// the same layout.
//
// NOTE [Replicated model state]: without FSDP (parallel.mode ddp, one process
// or several) the memory entry's params, grads and optimizer are what the run
// holds, not the tracker's phase peaks (the model is built before any phase
// is open, so `parameters` would read 0, and the backward phase also counts
// activation gradients): params = every parameter's storage, frozen too, in
// its dtype (each storage once: a tied head shares the embedding's);
// grads = the trainable parameters' .grad storages as the optimizer step finds
// them (the largest since the last entry: the engine drops them after each
// step), plus DDP's flat gradient buckets, which distributed::GradientSync allocates
// once beside them (NOTE [Gradient buckets]); optimizer = AdamW's state.
// gathered stays 0 and activations the forward phase's peak, as under FSDP.
// The planner's single and ddp strategies model the same bytes (NOTE
// [Replicated modes] in backend/fsdp_plan/memory_estimate.h).
//
// NOTE [Step peak]: every rank entry carries step_peak (schema 1.3), the
// memory tracker's highest live tracked CPU tensor bytes from the end of the
// previous step to the end of the one reported (MemorySnapshot::stepPeak,
// reset at the end of every reportStep(), after onProgress), in every mode:
// what fsdp_peak_probe measures (NOTE [Measured peak per rank] in
// bench/fsdp/peak_probe.cpp) and the planner's peak is held to. The first step
// after start or resume is left without one: its interval holds the set-up
// (under FSDP the model built before sharding) and the first window's
// gradient-flow check. The tracker's own peak interval (resetMemoryPeaks) stays
// untouched, so params etc. keep their meaning and a probe may reset it.
//
// NOTE [Device figures per rank]: on an accelerator each rank's entry also
// carries its device's figures (schema 1.4; NOTE [Device memory by phase] in
// backend/telemetry/memory_tracker.h), read and restarted (resetDevicePeaks)
// with every entry, so device_peak and the phases' peaks cover the time since
// the previous memory event. They travel in kDeviceSlots fixed slots after the
// other figures: the device index (-1: none, CPU), allocated, peak, reserved,
// reserved peak, then per phase its allocated and reserved peak (-1: the phase
// was not current since the last report). Every rank of a run has the same
// device type, so rank 0 names the others' devices with its own type.
#include "backend/trainer/rank_reporter.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

#include "backend/distributed/heartbeat.h"
#include "backend/runtime/device_memory.h"
#include "backend/telemetry/memory_tracker.h"
#include "backend/trainer/layout_event.h"
#include "backend/trainer/parallelize.h"
#include "backend/trainer/slow_ranks.h"

namespace fs::trainer {

using Clock = std::chrono::steady_clock;

namespace {
double secondsAfter(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// The bytes of the tensors' storages, each storage once.
int64_t storageBytes(const std::vector<torch::Tensor>& tensors) {
  std::set<const void*> seen;
  int64_t bytes = 0;
  for (const auto& t : tensors) {
    if (!t.defined() || !t.has_storage()) continue;
    if (seen.insert(t.storage().unsafeGetStorageImpl()).second)
      bytes += static_cast<int64_t>(t.storage().nbytes());
  }
  return bytes;
}

constexpr size_t kDeviceSlots = 5 + 2 * telemetry::kPhaseCount;

// NOTE [Device figures per rank]: the entry's device fields as kDeviceSlots values.
void appendDeviceSlots(const protocol::RankMemory& m, std::vector<double>& out) {
  std::vector<double> slots(kDeviceSlots, -1.0);
  const size_t colon = m.device.rfind(':');
  if (m.device_bytes && colon != std::string::npos) {
    slots[0] = std::atof(m.device.c_str() + colon + 1);
    slots[1] = static_cast<double>(*m.device_bytes);
    slots[2] = static_cast<double>(m.device_peak.value_or(0));
    slots[3] = static_cast<double>(m.device_reserved.value_or(0));
    slots[4] = static_cast<double>(m.device_reserved_peak.value_or(0));
    for (size_t i = 0; i < telemetry::kPhaseCount; ++i) {
      const auto it =
          m.device_phases.find(std::string(telemetry::phaseName(static_cast<telemetry::Phase>(i))));
      if (it == m.device_phases.end()) continue;
      slots[5 + 2 * i] = static_cast<double>(it->second.allocated_peak);
      slots[6 + 2 * i] = static_cast<double>(it->second.reserved_peak);
    }
  }
  out.insert(out.end(), slots.begin(), slots.end());
}

// The inverse of appendDeviceSlots for one rank; `type` names the device ("cuda").
void readDeviceSlots(const std::function<double(size_t)>& slot, const std::string& type,
                     protocol::RankMemory& m) {
  if (slot(0) < 0) return;
  m.device = type + ":" + std::to_string(static_cast<int>(slot(0)));
  m.device_bytes = static_cast<int64_t>(slot(1));
  m.device_peak = static_cast<int64_t>(slot(2));
  m.device_reserved = static_cast<int64_t>(slot(3));
  m.device_reserved_peak = static_cast<int64_t>(slot(4));
  for (size_t i = 0; i < telemetry::kPhaseCount; ++i) {
    if (slot(5 + 2 * i) < 0) continue;
    m.device_phases[std::string(telemetry::phaseName(static_cast<telemetry::Phase>(i)))] = {
        static_cast<int64_t>(slot(5 + 2 * i)), static_cast<int64_t>(slot(6 + 2 * i))};
  }
}
}  // namespace

RankReporter::RankReporter(const protocol::RunConfig& config, checkpoint::TrainerState& state,
                           std::shared_ptr<distributed::Communicator> comm,
                           distributed::Membership* membership, std::shared_ptr<spdlog::logger> log,
                           telemetry::TelemetryEmitter* events, RankReporterOptions options)
    : config_(config),
      state_(state),
      comm_(std::move(comm)),
      membership_(membership),
      log_(std::move(log)),
      events_(events),
      options_(std::move(options)),
      lastHeartbeat_(Clock::now()) {}

void RankReporter::emit(protocol::EventBody body) {
  if (events_) events_->emit(std::move(body));
}

void RankReporter::countResumed(int64_t iteration) {
  for (const auto& d : config_.data.datasets)
    samplesSeen_[d.name] = iteration * d.batch_size * options_.world;
}

void RankReporter::reportStep(const StepResult& r, double stepTime, double dataTime) {
  const int64_t step = state_.counters.step;
  const int64_t epoch = state_.counters.epoch;
  const bool distributed = options_.world > 1;
  // Cumulative counts advance every step; the event (gate reads included) is
  // only built when it is written.
  std::map<std::string, int64_t> samples, tokens;
  std::map<std::string, double> perSecond;
  double samplesPerS = 0;
  for (const auto& [name, n] : r.samples) {
    samples[name] = (samplesSeen_[name] += n * options_.world);
    perSecond[name] = stepTime > 0 ? n * options_.world / stepTime : 0;
    samplesPerS += perSecond[name];
  }
  for (const auto& [name, n] : r.tokens) tokens[name] = (tokensSeen_[name] += n * options_.world);
  const double lr = state_.optimizer->adamw().param_groups().front().options().get_lr();
  // Both conditions are the same on every rank: the per-rank gather below is a collective.
  const bool stepDue = step % std::max<int64_t>(1, config_.telemetry.interval_steps) == 0 || r.skipped;
  const bool memoryDue = step % std::max<int64_t>(1, config_.telemetry.memory_every_steps) == 0;
  if (stepDue) {
    protocol::StepEvent e;
    e.step = step;
    e.epoch = static_cast<int>(epoch);
    e.samples = std::move(samples);
    e.tokens = std::move(tokens);
    e.loss = r.loss;
    for (const auto& [name, l] : r.loss) e.rank_loss[name] = {l};
    e.lr = lr;
    e.grad_norm = r.gradNorm;
    e.loss_scale = r.lossScale;
    e.step_time_s = stepTime;
    e.data_time_s = dataTime;
    e.comm_time_s = r.waitS;
    e.samples_per_s = perSecond;
    for (const auto& g : gateValues(*state_.model, state_.sharded.get())) {
      e.gates.push_back({static_cast<int>(g.layer), g.attn, g.ff});
    }
    e.skipped = r.skipped;
    e.skip_reason = r.skipReason;
    if (distributed) {
      // NOTE [Per-rank figures]: written when the other ranks' figures arrived.
      pending_ = Pending{step, std::move(e), memoryDue, rankFigures(r, stepTime, dataTime, memoryDue)};
    } else {
      emit(std::move(e));
    }
  } else if (memoryDue && distributed) {
    pending_ = Pending{step, std::nullopt, true, rankFigures(r, stepTime, dataTime, true)};
  }
  if (memoryDue && !distributed) emitMemory();
  emitDataStats();
  if (r.skipped) log_->warn("step {} skipped on every rank: {}", step + 1, r.skipReason);
  if (step % std::max<int64_t>(1, config_.telemetry.logging_steps) == 0) {
    std::string losses;
    for (const auto& [name, l] : r.loss) losses += " loss_" + name + "=" + std::to_string(l);
    log_->info("step {}/{} epoch {}{} lr={} grad_norm={}", step, options_.totalSteps, epoch, losses, lr,
               r.gradNorm.value_or(-1.0));
  }
  if (options_.onProgress) {
    Progress p;
    p.step = step;
    p.totalSteps = options_.totalSteps;
    p.epoch = epoch;
    p.loss = r.loss;
    p.lr = lr;
    p.stepTimeS = stepTime;
    p.samplesPerS = samplesPerS;
    options_.onProgress(p);
  }
  telemetry::resetStepPeak();  // NOTE [Step peak]
  setUpInStepPeak_ = false;
}

void RankReporter::emitMemory() {
  protocol::MemoryEvent m;
  m.step = state_.counters.step;
  m.ranks.push_back(rankMemory());
  emit(m);
}

void RankReporter::emitDataStats() {
  data::DataSource& source = *state_.source;
  for (const auto& line : source.takeProblems()) log_->warn("data: {}", line);
  // data_stats is sent when something new was dropped or filtered; the full
  // counts (per shard) are only copied then.
  const int64_t dropped = source.notAccepted();
  if (dropped == lastDropped_) return;
  lastDropped_ = dropped;
  const auto counts = source.dropCounts();
  protocol::DataStatsEvent e;
  e.step = state_.counters.step;
  for (const auto& [name, c] : counts) {
    e.dropped[name] = c.byReason;
    e.accepted[name] = c.accepted;
    if (!c.byShard.empty()) e.shards[name] = c.byShard;
  }
  emit(std::move(e));
}

protocol::RankMemory RankReporter::rankMemory() const {
  const auto snapshot = telemetry::memorySnapshot();
  auto m = snapshot.toRankMemory(static_cast<int>(options_.rank));
  if (snapshot.tracking && !setUpInStepPeak_) m.step_peak = snapshot.stepPeak;  // NOTE [Step peak]
  if (snapshot.device) telemetry::resetDevicePeaks();  // NOTE [Device figures per rank]
  if (const auto& sharded = state_.sharded) {
    // Model state as the runtime holds it (the planner's exact figures), not the tracker's phase peaks,
    // which also count activation gradients and step temporaries.
    m.params = sharded->shardBytes();
    m.grads = sharded->peakShardGradientBytes();
    m.optimizer = state_.optimizer->stateBytes();
    m.gathered = sharded->peakGatheredBytes();
    m.gathered_units = sharded->peakUnitsGathered();
    const auto at = layoutPositions(*sharded);
    for (size_t i : sharded->unitsAtPeak()) m.gathered_at_peak.push_back(at[i]);
    std::sort(m.gathered_at_peak.begin(), m.gathered_at_peak.end());
    sharded->resetPeak();
  } else if (state_.model) {  // NOTE [Replicated model state]
    m.params = storageBytes(state_.model->parameters());
    m.grads = gradientBytes_;
    m.optimizer = state_.optimizer ? state_.optimizer->stateBytes() : 0;
    gradientBytes_ = 0;
  }
  return m;
}

void RankReporter::noteGradients(int64_t bucketBytes) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : state_.trainable) {
    if (p.tensor.grad().defined()) grads.push_back(p.tensor.grad());
  }
  gradientBytes_ = std::max(gradientBytes_, storageBytes(grads) + bucketBytes);
}

std::vector<double> RankReporter::rankFigures(const StepResult& r, double stepTime, double dataTime,
                                              bool memory) const {
  const auto& ds = config_.data.datasets;
  // The memory fields are only read when a memory event is due (they cost a /proc read); zeros otherwise.
  const auto snap = memory ? rankMemory() : protocol::RankMemory{};
  std::vector<double> mine;
  for (const auto& d : ds) mine.push_back(r.localLoss.count(d.name) ? r.localLoss.at(d.name) : 0.0);
  const double fields[] = {stepTime,
                           dataTime,
                           r.waitS,
                           static_cast<double>(snap.rss_bytes),
                           static_cast<double>(snap.peak_bytes),
                           static_cast<double>(snap.params),
                           static_cast<double>(snap.grads),
                           static_cast<double>(snap.optimizer),
                           static_cast<double>(snap.gathered),
                           static_cast<double>(snap.activations),
                           snap.gathered_units ? static_cast<double>(*snap.gathered_units) : -1.0,
                           snap.step_peak ? static_cast<double>(*snap.step_peak) : -1.0};
  mine.insert(mine.end(), std::begin(fields), std::end(fields));
  appendDeviceSlots(snap, mine);  // NOTE [Device figures per rank]
  // gathered_at_peak as one 0/1 slot per layout unit: a list of the same length on every rank.
  const size_t at = mine.size();
  mine.resize(at + static_cast<size_t>(layoutUnitCount(state_.sharded.get())), 0.0);
  for (int u : snap.gathered_at_peak) mine[at + static_cast<size_t>(u)] = 1.0;
  return mine;
}

void RankReporter::flush() {
  if (!pending_) return;
  const int64_t K = static_cast<int64_t>(pending_->mine.size());
  torch::Tensor all = torch::zeros({options_.world * K}, torch::kFloat64);
  all.narrow(0, options_.rank * K, K).copy_(torch::tensor(pending_->mine, torch::kFloat64));
  comm_->allReduce(all, distributed::ReduceOp::kSum, "rank figures");
  completeReport(std::vector<double>(all.data_ptr<double>(), all.data_ptr<double>() + all.numel()));
}

void RankReporter::completeReport(const std::vector<double>& all) {
  if (!pending_) return;
  Pending report = std::move(*pending_);
  pending_.reset();
  if (options_.rank != 0) return;
  const auto& ds = config_.data.datasets;
  const size_t K = report.mine.size();
  if (all.size() != K * static_cast<size_t>(options_.world)) {
    log_->warn("per-rank figures of step {}: got {} values, expected {}", report.step, all.size(),
               K * static_cast<size_t>(options_.world));
    return;
  }
  const size_t D = ds.size();
  auto field = [&](int64_t rank, size_t i) { return all[static_cast<size_t>(rank) * K + i]; };
  if (report.event) {
    for (size_t i = 0; i < D; ++i) {
      auto& list = report.event->rank_loss[ds[i].name];
      list.clear();
      for (int64_t q = 0; q < options_.world; ++q) list.push_back(field(q, i));
    }
    emit(std::move(*report.event));
  }
  if (report.memory) {
    // NOTE [Device figures per rank]: the others' device type is rank 0's.
    std::string deviceType = "cuda";
    if (const auto own = telemetry::deviceMemorySnapshot())
      deviceType = own->device.substr(0, own->device.rfind(':'));
    protocol::MemoryEvent m;
    m.step = report.step;
    for (int64_t q = 0; q < options_.world; ++q) {
      protocol::RankMemory rm;
      rm.rank = static_cast<int>(q);
      rm.rss_bytes = static_cast<int64_t>(field(q, D + 3));
      rm.peak_bytes = static_cast<int64_t>(field(q, D + 4));
      rm.params = static_cast<int64_t>(field(q, D + 5));
      rm.grads = static_cast<int64_t>(field(q, D + 6));
      rm.optimizer = static_cast<int64_t>(field(q, D + 7));
      rm.gathered = static_cast<int64_t>(field(q, D + 8));
      rm.activations = static_cast<int64_t>(field(q, D + 9));
      if (field(q, D + 10) >= 0) rm.gathered_units = static_cast<int>(field(q, D + 10));
      if (field(q, D + 11) >= 0) rm.step_peak = static_cast<int64_t>(field(q, D + 11));
      readDeviceSlots([&](size_t i) { return field(q, D + 12 + i); }, deviceType, rm);
      const size_t units = D + 12 + kDeviceSlots;
      for (size_t u = units; u < K; ++u) {  // the layout-unit slots after the fixed fields
        if (field(q, u) > 0.5) rm.gathered_at_peak.push_back(static_cast<int>(u - units));
      }
      m.ranks.push_back(rm);
    }
    emit(std::move(m));
  }
  // NOTE [Slow ranks] in slow_ranks.h.
  std::vector<double> work;
  for (int64_t q = 0; q < options_.world; ++q) work.push_back(std::max(0.0, field(q, D) - field(q, D + 2)));
  double median = 0;
  for (int64_t q : updateSlowRanks(work, &slowRanks_, &median)) {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "rank %lld is slow: %.3f s of its own work per step (data %.3f s) vs a median of %.3f s; "
                  "the other ranks wait for it",
                  static_cast<long long>(q), work[static_cast<size_t>(q)], field(q, D + 1), median);
    log_->warn("{}", buf);
    emit(protocol::WarningEvent{"slow_rank", buf, static_cast<int>(q)});
  }
}

std::optional<telemetry::DeviceMemoryReader> deviceMemoryReader(const torch::Device& device) {
  if (!runtime::readDeviceMemory(device)) return std::nullopt;
  telemetry::DeviceMemoryReader reader;
  reader.device = device.str();
  reader.read = [device] {
    const runtime::DeviceMemory m = runtime::readDeviceMemory(device).value_or(runtime::DeviceMemory{});
    return telemetry::DeviceMemoryReading{m.allocated, m.reserved, m.peakAllocated, m.peakReserved};
  };
  reader.resetPeak = [device] { runtime::resetDevicePeaks(device); };
  return reader;
}

void RankReporter::heartbeatIfDue(bool paused) {
  if (!membership_ || options_.rank != 0) return;
  if (secondsAfter(lastHeartbeat_) < std::max(0.1, config_.telemetry.heartbeat_s)) return;
  lastHeartbeat_ = Clock::now();
  protocol::HeartbeatEvent h;
  h.step = state_.counters.step;
  h.state = paused ? protocol::RunState::kPaused : protocol::RunState::kRunning;
  try {
    for (const auto& b : membership_->heartbeat().board()) {
      h.ranks.push_back(protocol::RankCollective{b.rank, b.state.last, b.state.seq});
    }
  } catch (const std::exception& e) {
    log_->warn("heartbeat: {}", e.what());
  }
  emit(std::move(h));
}

}  // namespace fs::trainer
