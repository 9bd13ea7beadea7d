// The Trainer's distributed side: joining the run, agreeing on the resume
// point and the initial weights, DDP gradient averaging. The control
// request's agreement is data_ready_round.cpp and control_loop.cpp, the per-rank figures'
// rank_reporter.cpp.
//
// NOTE [Distributed step]: every rank runs the same loop; anything that
// decides what the loop does next is agreed through a collective so all
// ranks take it at the same iteration. An iteration has two small
// agreements (iteration_agreement.h), both asynchronous so that their
// latency hides behind compute, plus the gradient reduction; before it,
// one blocking data-ready round:
//  - the data-ready round (data_ready_round.h, NOTE [Waiting for data] in
//    trainer.cpp), before the batches are taken: whether every rank's data
//    is ready, and the control request (stop, kill, pause, resume,
//    checkpoint; rank 0 reads control/ files, every rank its own signals).
//    Every rank acts on the agreed request before the iteration, also while
//    a rank still waits for data. While paused the request is agreed on its
//    own (one max-all-reduce per poll, so paused ranks keep meeting);
//  - the opening, launched before the first forward: each dataset's
//    supervised-token count (known from the labels) and the per-rank
//    figures of the last step report;
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
// Under DDP gradients are averaged by distributed::GradientSync (buckets
// all-reduced during the backward pass that closes an accumulation window;
// the windows' other micro-steps accumulate locally); under FSDP by the
// units' reduce-scatters (NOTE [FSDP in the engine] in trainer_fsdp.cpp). The embedding row mask and clipping
// run after the reduction, on identical gradients, so every rank makes the same update.
// The agreements and the data-ready round exchange host tensors on the host
// group, the gradients and parameters travel on the device group (NOTE [Host
// and device groups] in backend/distributed/groups.h): with parallel.dist_backend
// auto that is NCCL when the rank trains on a GPU, the host group itself
// (Gloo) otherwise; an explicit nccl on a rank without a GPU stops at
// start-up naming the field.
#include <torch/torch.h>

#include <algorithm>
#include <cmath>

#include "backend/launch/world_env.h"
#include "backend/runtime/runtime_info.h"
#include "backend/trainer/trainer_impl.h"

namespace fs::trainer {

using protocol::Status;
using protocol::StatusOr;

StatusOr<std::string> Trainer::deviceBackend() const {
  const std::string& asked = config_.parallel.dist_backend;
  // NOTE [Host and device groups] in backend/distributed/groups.h: the host group is Gloo whatever is asked.
  if (asked == "auto" || asked.empty()) return std::string(device_.is_cuda() ? "nccl" : "gloo");
  if (asked != "nccl" || device_.is_cuda()) return asked;
  std::string why =
      "this rank trains on " + device_.str() + " (parallel.device '" + config_.parallel.device + "'";
  if (!runtime::builtWithCuda()) {
    why += "; this engine was built without CUDA";
  } else if (config_.parallel.device == "auto") {
    why += "; no CUDA device for it is visible";
  }
  return Status::unsupported("parallel.dist_backend: nccl carries tensors on CUDA devices only, but " + why +
                             "); set parallel.dist_backend=auto or gloo, or run the ranks on GPUs");
}

Status Trainer::joinWorld() {
  if (!place_.distributed()) {
    groups_ = distributed::soloGroups();
    if (options_.wrapGroups) options_.wrapGroups(groups_);
    return Status::ok();
  }
  auto backend = deviceBackend();
  if (!backend) return backend.status();
  distributed::RendezvousOptions o;
  o.rank = static_cast<int>(options_.rank);
  o.world = static_cast<int>(options_.world);
  o.localWorld = static_cast<int>(std::max<int64_t>(1, options_.localWorld));
  o.masterAddr = options_.masterAddr;
  o.masterPort = static_cast<int>(options_.masterPort);
  o.backend = backend.value();
  o.deviceIndex = device_.is_cuda() ? device_.index() : -1;
  o.preflightTimeout = std::chrono::seconds(std::max<int64_t>(1, config_.parallel.preflight_timeout_s));
  o.collectiveTimeout = std::chrono::seconds(std::max<int64_t>(1, config_.parallel.collective_timeout_s));
  o.identity = "engine " + runtime::engineVersion() + " config " + configHash(config_);
  o.host = options_.host;
  o.sharedMemory = config_.parallel.intra_node_transport != "gloo";
  o.sharedMemoryArenaBytes = static_cast<uint64_t>(std::max<int64_t>(1, config_.parallel.shm_arena_mib))
                             << 20;
  const auto env = launch::currentEnvironment();
  if (auto it = env.find("TORCHELASTIC_USE_AGENT_STORE"); it != env.end())
    o.launcherServesStore = it->second == "True";
  if (auto it = env.find("TORCHELASTIC_RESTART_COUNT"); it != env.end()) o.keyPrefix = it->second;
  log_->info("rank {} of {} joining the run at {}:{} (device group: {})", o.rank, o.world, o.masterAddr,
             o.masterPort, o.backend);
  auto joined = distributed::joinRun(o);
  if (!joined) return joined.status();
  membership_ = std::move(joined.value());
  groups_ = membership_->groups();
  if (groups_.shared()) {
    log_->info("host and device group: {}", groups_.host->transport());
  } else {
    log_->info("host group: {}; device group: {}", groups_.host->transport(), groups_.device->transport());
  }
  for (const auto& p : membership_->peers()) log_->info("rank {}: {} pid {}", p.rank, p.host, p.pid);
  if (options_.wrapGroups) options_.wrapGroups(groups_);
  return Status::ok();
}

Status Trainer::agreeAfterSetUp() {
  if (!place_.distributed()) return Status::ok();
  // Every rank must continue from the same point of the same run.
  const checkpoint::TrainCounters& counters = state_.counters;
  torch::Tensor at = torch::tensor({counters.step, counters.iteration, counters.epoch}, torch::kInt64);
  torch::Tensor lo = -at.clone();
  torch::Tensor hi = at.clone();
  groups_.host->allReduce(hi, distributed::ReduceOp::kMax, "resume point max");
  groups_.host->allReduce(lo, distributed::ReduceOp::kMax, "resume point min");
  if (!torch::equal(hi, -lo)) {
    return Status::invalidArgument(
        "ranks resumed from different points (optimizer steps " + std::to_string(-lo[0].item<int64_t>()) +
        " to " + std::to_string(hi[0].item<int64_t>()) + "; this rank at " + std::to_string(counters.step) +
        "): every rank must see the same run directory and checkpoints");
  }
  if (!place_.fsdp || config_.parallel.sync_module_states) {
    // Under delayed init the parameters come with their shards (shardModel), never whole.
    std::vector<torch::Tensor> state;
    if (!place_.delayedInit) {
      for (const auto& p : state_.model->parameters()) state.push_back(p);
    }
    for (const auto& b : state_.model->buffers()) state.push_back(b);
    // On the device already (buildModelAndOptimizer): the device group.
    distributed::GradientSync::broadcastFromRank0(*groups_.device, state, "initial weights from rank 0");
  }
  if (place_.fsdp) return Status::ok();  // NOTE [FSDP in the engine]
  std::vector<torch::Tensor> params;
  for (const auto& p : state_.trainable) params.push_back(p.tensor);
  gradSync_ = std::make_unique<distributed::GradientSync>(groups_.device, params);
  log_->info("DDP: {} trainable tensors in {} gradient bucket(s)", params.size(), gradSync_->stats().buckets);
  return Status::ok();
}

void Trainer::synchronizeGradients(StepResult* r) {
  if (!gradSync_) return;
  if (!gradSync_->armed()) gradSync_->arm();  // the window's last backward was skipped on this rank
  gradSync_->finish();
  r->waitS += gradSync_->stats().finishSeconds;
}

}  // namespace fs::trainer
