// The Trainer's validation: every data.val_every_steps optimizer steps, the
// mean loss over the held-out stream's batches (every rank's), as a
// validation event.
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <optional>

#include "backend/step/labels.h"
#include "backend/step/loss.h"
#include "backend/trainer/trainer_impl.h"

namespace fs::trainer {

using protocol::Status;

Status Trainer::runValidation() {
  const auto t0 = std::chrono::steady_clock::now();
  torch::NoGradGuard noGrad;
  state_.model->eval();
  std::map<std::string, double> sum;
  std::map<std::string, int64_t> count;
  valSource_->setEpoch(0);
  Status status = Status::ok();
  std::optional<data::StepBatches> last;  // FSDP: forwards of a rank whose batches ran out
  while (true) {
    auto next = valSource_->next();
    const bool have = next.isOk() && next.value();
    bool takePart = false;  // FSDP: forward without counting, so the other ranks' gathers meet
    if (state_.sharded && place_.distributed()) {
      // Forwards gather units, so every rank runs as many as the rank with the most batches.
      torch::Tensor t =
          torch::tensor({int64_t{have}, int64_t{!next.isOk()}, int64_t{!have && !last}}, torch::kInt64);
      groups_.host->allReduce(t, distributed::ReduceOp::kMax, "validation batch");
      if (t[1].item<int64_t>() && next.isOk())
        status = Status::invalidArgument("validation failed on another rank");
      if (t[1].item<int64_t>() || !t[0].item<int64_t>()) {
        if (!next) status = Status::invalidArgument("validation: " + next.status().message());
        break;
      }
      if (t[2].item<int64_t>()) {
        status = Status::invalidArgument(
            "validation under FSDP: a rank holds no validation batch while others do; give every rank "
            "validation data (more val_shards, or fewer ranks)");
        break;
      }
      takePart = !have;
    } else if (!next) {
      status = Status::invalidArgument("validation: " + next.status().message());
      break;
    } else if (!next.value()) {
      break;
    }
    if (have) last = *next.value();
    for (const data::Batch& b : last->batches) {
      if (state_.sharded) state_.sharded->beginForward();
      const step::LmLoss loss = forwardLoss(b, step::makeLabels(b.kind, b.inputIds, tokens_), false);
      if (state_.sharded) state_.sharded->finishForward();
      if (loss.noTargets || takePart) continue;
      sum[b.dataset] += loss.loss.item<double>();
      ++count[b.dataset];
    }
  }
  state_.model->train();
  if (!status) return status;
  if (place_.distributed()) {
    // The mean over every rank's validation batches (ranks may hold different counts).
    const auto& ds = config_.data.datasets;
    std::vector<double> v;
    for (const auto& d : ds) {
      v.push_back(sum.count(d.name) ? sum[d.name] : 0.0);
      v.push_back(static_cast<double>(count.count(d.name) ? count[d.name] : 0));
    }
    torch::Tensor t = torch::tensor(v, torch::kFloat64);
    groups_.host->allReduce(t, distributed::ReduceOp::kSum, "validation losses");
    sum.clear();
    count.clear();
    for (size_t i = 0; i < ds.size(); ++i) {
      const auto n = static_cast<int64_t>(std::llround(t[static_cast<int64_t>(2 * i + 1)].item<double>()));
      if (n == 0) continue;
      sum[ds[i].name] = t[static_cast<int64_t>(2 * i)].item<double>();
      count[ds[i].name] = n;
    }
  }
  protocol::ValidationEvent e;
  e.step = state_.counters.step;
  for (const auto& [name, total] : sum) e.loss[name] = total / static_cast<double>(count[name]);
  e.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string line;
  for (const auto& [name, l] : e.loss) line += " val_loss_" + name + "=" + std::to_string(l);
  log_->info("validation at step {}:{} ({:.2f} s)", state_.counters.step, line, *e.duration_s);
  emit(std::move(e));
  return Status::ok();
}

}  // namespace fs::trainer
