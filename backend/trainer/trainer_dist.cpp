// The Trainer's distributed side: joining the run, agreeing on every
// control-flow decision, DDP gradient averaging and per-rank telemetry.
//
// NOTE [Distributed step]: every rank runs the same loop; anything that
// decides what the loop does next is agreed through a collective so all
// ranks take it at the same iteration. An iteration has two small
// agreements (iteration_agreement.h), both asynchronous so that their
// latency hides behind compute, plus the gradient reduction:
//  - the opening, launched before the first forward: each dataset's
//    supervised-token count (known from the labels) and the control request
//    (stop, kill, pause, resume, checkpoint; rank 0 reads control/ files,
//    every rank its own signals). Every rank acts on the agreed request
//    after the iteration. While paused, and at the end of an epoch, the
//    request is agreed on its own (one max-all-reduce per poll, so paused
//    ranks keep meeting);
//  - the closing, launched after the last forward: per dataset a
//    non-finite flag, loss x tokens and the loss. Any non-finite loss skips
//    the iteration's update on every rank (the reference skips on one rank
//    only and then hangs under FSDP); a rank does no backward of its own
//    non-finite loss.
//  - the loss: by default each rank scales its mean loss by world x local
//    tokens / all tokens before backward, so DDP's average of gradients is
//    the gradient of the mean over every supervised token of the global
//    batch: N ranks x b samples train exactly as one process with N x b.
//    The logged loss is that global mean (the token-weighted mean over
//    ranks); per-rank losses are kept in rank_loss. compat: openflamingo
//    averages per-rank means, as the reference's DDP does, and logs their
//    plain mean.
// Gradients are averaged by dist::GradientSync (buckets all-reduced during
// the backward pass that closes an accumulation window; the windows' other
// micro-steps accumulate locally). The embedding row mask and clipping run
// after the reduction, on identical gradients, so every rank makes the
// same update.
#include <torch/torch.h>

#include <algorithm>
#include <cmath>

#include "backend/dist/heartbeat.h"
#include "backend/trainer/slow_ranks.h"
#include "backend/trainer/trainer_impl.h"
#include "backend/launch/world_env.h"
#include "backend/protocol/config_yaml.h"
#include "backend/runtime/runtime_info.h"
#include "backend/telemetry/memory_tracker.h"

namespace fs::engine {

using protocol::Status;
using Clock = std::chrono::steady_clock;

namespace {
double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string backendFor(const protocol::RunConfig& c, torch::Device device) {
  if (c.parallel.dist_backend == "auto" || c.parallel.dist_backend.empty()) return device.is_cuda() ? "nccl" : "gloo";
  return c.parallel.dist_backend;
}
}  // namespace

void Trainer::emit(protocol::EventBody body) {
  if (emitter_) emitter_->emit(std::move(body));
}

Status Trainer::joinWorld() {
  if (!distributed()) {
    comm_ = dist::makeSoloCommunicator();
    return Status::ok();
  }
  dist::RendezvousOptions o;
  o.rank = static_cast<int>(options_.rank);
  o.world = static_cast<int>(options_.world);
  o.localWorld = static_cast<int>(std::max<int64_t>(1, options_.localWorld));
  o.masterAddr = options_.masterAddr;
  o.masterPort = static_cast<int>(options_.masterPort);
  o.backend = backendFor(config_, device_);
  o.preflightTimeout = std::chrono::seconds(std::max<int64_t>(1, config_.parallel.preflight_timeout_s));
  o.collectiveTimeout = std::chrono::seconds(std::max<int64_t>(1, config_.parallel.collective_timeout_s));
  o.identity = "engine " + runtime::engineVersion() + " config " + configHash(config_);
  o.host = options_.host;
  o.sharedMemory = config_.parallel.intra_node_transport != "gloo";
  o.sharedMemoryArenaBytes = static_cast<uint64_t>(std::max<int64_t>(1, config_.parallel.shm_arena_mib)) << 20;
  const auto env = launch::currentEnvironment();
  if (auto it = env.find("TORCHELASTIC_USE_AGENT_STORE"); it != env.end()) o.launcherServesStore = it->second == "True";
  if (auto it = env.find("TORCHELASTIC_RESTART_COUNT"); it != env.end()) o.keyPrefix = it->second;
  log_->info("rank {} of {} joining the run at {}:{} ({})", o.rank, o.world, o.masterAddr, o.masterPort, o.backend);
  auto joined = dist::joinRun(o);
  if (!joined) return joined.status();
  membership_ = std::move(joined.value());
  comm_ = membership_->worldPtr();
  log_->info("world group: {}", comm_->transport());
  for (const auto& p : membership_->peers()) log_->info("rank {}: {} pid {}", p.rank, p.host, p.pid);
  lastHeartbeat_ = Clock::now();
  return Status::ok();
}

Status Trainer::agreeAfterSetUp() {
  if (!distributed()) return Status::ok();
  // Every rank must continue from the same point of the same run.
  torch::Tensor at = torch::tensor({step_, iteration_, epoch_}, torch::kInt64);
  torch::Tensor lo = -at.clone();
  torch::Tensor hi = at.clone();
  comm_->allReduce(hi, dist::ReduceOp::kMax, "resume point max");
  comm_->allReduce(lo, dist::ReduceOp::kMax, "resume point min");
  if (!torch::equal(hi, -lo)) {
    return Status::invalidArgument(
        "ranks resumed from different points (optimizer steps " + std::to_string(-lo[0].item<int64_t>()) + " to " +
        std::to_string(hi[0].item<int64_t>()) + "; this rank at " + std::to_string(step_) +
        "): every rank must see the same run directory and checkpoints");
  }
  if (!fsdp() || config_.parallel.sync_module_states) {
    // Under delayed init the parameters come with their shards (shardModel), never whole.
    std::vector<torch::Tensor> state;
    if (!delayedInit()) {
      for (const auto& p : model_->parameters()) state.push_back(p);
    }
    for (const auto& b : model_->buffers()) state.push_back(b);
    dist::GradientSync::broadcastFromRank0(*comm_, state, "initial weights from rank 0");
  }
  if (fsdp()) return Status::ok();  // NOTE [FSDP in the engine]
  std::vector<torch::Tensor> params;
  for (const auto& p : trainable_) params.push_back(p.tensor);
  gradSync_ = std::make_unique<dist::GradientSync>(comm_, params);
  log_->info("DDP: {} trainable tensors in {} gradient bucket(s)", params.size(), gradSync_->stats().buckets);
  return Status::ok();
}

ControlRequest Trainer::agreeOnControl(ControlRequest mine) {
  if (!distributed()) return mine;
  torch::Tensor t = torch::tensor({mine.stop, mine.kill, mine.pause, mine.resume, mine.checkpoint, mine.noCheckpoint},
                                  torch::kInt64);
  comm_->allReduce(t, dist::ReduceOp::kMax, "control");
  const auto v = t.accessor<int64_t, 1>();
  return ControlRequest{v[0], v[1], v[2], v[3], v[4], v[5]};
}

void Trainer::synchronizeGradients(StepResult* r) {
  if (!gradSync_) return;
  if (!gradSync_->armed()) gradSync_->arm();  // the window's last backward was skipped on this rank
  gradSync_->finish();
  r->waitS += gradSync_->stats().finishSeconds;
}

// NOTE [Per-rank figures]: a step's per-rank figures (per dataset loss,
// step, data and wait time, the memory breakdown) are only known when the
// step is over, so they ride on the next iteration's opening agreement
// rather than costing a collective of their own between steps; rank 0
// writes the step event (and the memory event) once they arrived. Before a
// pause and at the end of the run, flushRankReport() gathers them at once.
// Whether a report is pending depends only on the step number, so every
// rank passes the same layout.
std::vector<double> Trainer::rankFigures(const StepResult& r, double stepTime, double dataTime, bool memory) const {
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
                           snap.gathered_units ? static_cast<double>(*snap.gathered_units) : -1.0};
  mine.insert(mine.end(), std::begin(fields), std::end(fields));
  // gathered_at_peak as one 0/1 slot per layout unit: a list of the same length on every rank.
  const size_t at = mine.size();
  mine.resize(at + static_cast<size_t>(layoutUnitCount()), 0.0);
  for (int u : snap.gathered_at_peak) mine[at + static_cast<size_t>(u)] = 1.0;
  return mine;
}

void Trainer::flushRankReport() {
  if (!pendingReport_) return;
  const int64_t K = static_cast<int64_t>(pendingReport_->mine.size());
  torch::Tensor all = torch::zeros({options_.world * K}, torch::kFloat64);
  all.narrow(0, options_.rank * K, K).copy_(torch::tensor(pendingReport_->mine, torch::kFloat64));
  comm_->allReduce(all, dist::ReduceOp::kSum, "rank figures");
  completeRankReport(std::vector<double>(all.data_ptr<double>(), all.data_ptr<double>() + all.numel()));
}

void Trainer::completeRankReport(const std::vector<double>& all) {
  RankReport report = std::move(*pendingReport_);
  pendingReport_.reset();
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
      for (size_t u = D + 11; u < K; ++u) {  // the layout-unit slots after the fixed fields
        if (field(q, u) > 0.5) rm.gathered_at_peak.push_back(static_cast<int>(u - D - 11));
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

void Trainer::emitHeartbeatIfDue() {
  if (!membership_ || options_.rank != 0) return;
  if (secondsSince(lastHeartbeat_) < std::max(0.1, config_.telemetry.heartbeat_s)) return;
  lastHeartbeat_ = Clock::now();
  protocol::HeartbeatEvent h;
  h.step = step_;
  h.state = paused_ ? protocol::RunState::kPaused : protocol::RunState::kRunning;
  try {
    for (const auto& b : membership_->heartbeat().board()) {
      h.ranks.push_back(protocol::RankCollective{b.rank, b.state.last, b.state.seq});
    }
  } catch (const std::exception& e) {
    log_->warn("heartbeat: {}", e.what());
  }
  emit(std::move(h));
}

// Every rank consumes its stream in lockstep, so rank 0's position holds for
// all ranks of the same world. For another world size the position is
// carried over by samples: synthetic data then continues exactly where it
// stopped when world x batch divides the samples consumed.
Status Trainer::restoreDataPosition(data::DataPosition p) {
  const std::vector<int64_t> nowSizes = source_->position().batchSizes;
  if (p.batchSizes.empty()) p.batchSizes = nowSizes;  // written before batch sizes were recorded
  if (p.world == options_.world && p.batchSizes == nowSizes) {
    p.rank = options_.rank;
    return source_->restore(p);
  }
  const int64_t savedWorld = p.world;
  std::string lost;
  for (size_t i = 0; i < p.batchesConsumed.size() && i < nowSizes.size() && i < p.batchSizes.size(); ++i) {
    const int64_t samples = p.batchesConsumed[i] * savedWorld * p.batchSizes[i];
    const int64_t global = options_.world * nowSizes[i];
    p.batchesConsumed[i] = std::min(samples / global, source_->stepsPerEpoch());
    if (samples % global != 0) lost += (lost.empty() ? "" : ", ") + p.datasets[i];
  }
  p.rank = options_.rank;
  p.world = options_.world;
  p.batchSizes = nowSizes;
  if (Status s = source_->restore(p); !s) return s;
  std::string message = "resumed a run of " + std::to_string(savedWorld) + " ranks on " +
                        std::to_string(options_.world) +
                        " (or with other batch sizes): the data position was carried over by samples";
  if (!lost.empty()) message += " (rounded down for " + lost + ": world x batch does not divide it)";
  if (p.source != "synthetic") message += "; shard streams are re-split across the new ranks";
  log_->warn("{}", message);
  emit(protocol::WarningEvent{"world_size_changed", message, static_cast<int>(options_.rank)});
  return Status::ok();
}

}  // namespace fs::engine
