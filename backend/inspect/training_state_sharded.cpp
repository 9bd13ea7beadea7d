// readTrainingState for our sharded directories: index.json carries the
// optimizer groups (with param_names), the scheduler and the resume record;
// the moments are the index's optimizer entries (gathered over rank files);
// the step of each flat parameter is in the rank files.
#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "backend/inspect/training_state_parts.h"
#include "backend/protocol/wire/sharded_index.h"
#include "backend/tensorfile/tensor_stats.h"
#include "backend/tensorfile/torch_file.h"

namespace fs::inspect::detail {
namespace {

namespace tf = tensorfile;
using tf::PyValue;

}  // namespace

StatusOr<protocol::ShardedIndexRecord> readShardedIndexRecord(const CheckpointIndex& c) {
  const std::string indexPath = c.files().front();
  std::ifstream in(indexPath, std::ios::binary);
  if (!in) return Status::notFound(indexPath + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  auto record = protocol::decodeShardedIndex(text.str());
  if (!record) return Status::corruption(indexPath + ": " + record.status().message());
  return record;
}

Status readSharded(const CheckpointIndex& c, TrainingState& out) {
  auto record = readShardedIndexRecord(c);
  if (!record) return record.status();
  const protocol::ShardedIndexRecord& r = record.value();
  out.epoch = r.epoch;
  // The step of every flat parameter (rank file 0 holds shard 0 of each).
  std::map<std::string, double> stepOf;  // member name -> step
  if (c.files().size() > 1) {
    auto rank0 = tf::openTorchFile(c.files()[1]);
    if (!rank0) return Status::corruption(c.files()[1] + ": " + rank0.status().message());
    const PyValue* optimizer = rank0->root().find("optimizer");
    for (const auto& unit : r.units) {
      for (const auto& flat : unit.flats) {
        const PyValue* state = optimizer ? optimizer->find(flat.key) : nullptr;
        const PyValue* step = state ? state->find("step") : nullptr;
        if (!step) continue;
        std::optional<double> value = step->asDouble();
        if (!value && step->isTensor()) {
          auto view = rank0->view(*step->tensor);
          if (!view)
            return Status::corruption(c.files()[1] + ": optimizer." + flat.key +
                                      ".step: " + view.status().message());
          auto stats = tf::computeStats(view.value(), {});
          if (stats) value = stats->moments.mean;
        }
        if (value) {
          for (const auto& m : flat.members) stepOf[m.name] = *value;
        }
      }
    }
  }
  OptimizerState opt;
  opt.nameSource = "the sharded index's param_names";
  for (std::size_t g = 0; g < r.optimizer.paramGroups.size(); ++g) {
    const auto& pg = r.optimizer.paramGroups[g];
    OptimizerGroup group{g,
                         pg.lr,
                         pg.weightDecay,
                         pg.betas.size() > 0 ? pg.betas[0] : 0,
                         pg.betas.size() > 1 ? pg.betas[1] : 0,
                         pg.eps,
                         pg.initialLr,
                         pg.params.size()};
    opt.groups.push_back(group);
    for (std::size_t k = 0; k < pg.params.size(); ++k) {
      OptimizerParamState p;
      p.id = pg.params[k];
      p.name = k < pg.paramNames.size() ? pg.paramNames[k] : "";
      p.group = g;
      const std::string prefix = "state." + std::to_string(p.id) + ".";
      if (!c.find(prefix + "exp_avg", Section::kOptimizer)) continue;  // not stepped (no state)
      if (auto s = stepOf.find(p.name); s != stepOf.end()) p.step = s->second;
      auto m = norm(c, prefix + "exp_avg", &p.shape);
      if (!m) return m.status();
      p.expAvgNorm = m.value();
      auto v = norm(c, prefix + "exp_avg_sq", nullptr);
      if (!v) return v.status();
      p.expAvgSqNorm = v.value();
      opt.params.push_back(std::move(p));
    }
  }
  std::sort(opt.params.begin(), opt.params.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  out.optimizer = std::move(opt);
  SchedulerState sched;
  sched.lastEpoch = r.scheduler.lastEpoch;
  sched.stepCount = r.scheduler.stepCount;
  sched.baseLrs = r.scheduler.baseLrs;
  sched.lastLr = r.scheduler.lastLr;
  out.scheduler = sched;
  if (Status s = protocol::checkResumeRecord(r.resume); !s) return bad(c, "index.json resume", s.message());
  out.resume = describeResume(r.resume);
  return Status::ok();
}

}  // namespace fs::inspect::detail
