#include "backend/fsdp/sharded_optim_state.h"

#include <map>

namespace fs::fsdp {

using protocol::Status;

namespace {

// Names in state-dict index order (group 0, then group 1).
std::vector<std::string> indexNames(const std::vector<step::ParamGroup>& groups) {
  std::vector<std::string> names;
  for (const auto& g : groups) names.insert(names.end(), g.names.begin(), g.names.end());
  return names;
}

std::vector<step::NamedParameter> named(const std::vector<ShardParameter>& shards) {
  std::vector<step::NamedParameter> out;
  for (const auto& s : shards) out.push_back(s.param);
  return out;
}

step::AdamWGroupStateDict hyperparameters(const step::AdamWGroupStateDict& g) {
  step::AdamWGroupStateDict out = g;
  out.params.clear();
  out.paramNames.clear();
  return out;
}

}  // namespace

std::vector<ShardParameter> shardParameters(const ShardedModel& model) {
  std::vector<ShardParameter> out;
  for (const auto& u : model.units()) {
    for (size_t k = 0; k < u.flats.size(); ++k) {
      FlatParameter& f = *u.flats[k];
      if (!f.trainable()) continue;
      // ShardedModel splits trainable members by decay group, so the first member speaks for all.
      const bool decays = step::decaysWeight(f.members().front().name);
      out.push_back({step::NamedParameter{u.path + "#" + std::to_string(k), f.shard(), decays}, &f});
    }
  }
  return out;
}

protocol::StatusOr<step::OptimizerStateDict> toShardState(const step::OptimizerStateDict& full,
                                                          const std::vector<step::NamedParameter>& fullParams,
                                                          const std::vector<ShardParameter>& shards,
                                                          const ShardedModel& model, double weightDecay) {
  const auto fullNames = indexNames(step::groupParameters(fullParams, weightDecay));
  if (full.paramGroups.size() != 2) {
    return Status::invalidArgument("optimizer state: " + std::to_string(full.paramGroups.size()) +
                                   " param groups, expected 2");
  }
  std::map<std::string, const step::AdamWParamStateDict*> byName;
  for (const auto& e : full.state) {
    if (e.index < 0 || e.index >= static_cast<int64_t>(fullNames.size())) {
      return Status::invalidArgument("optimizer state: index " + std::to_string(e.index) + " outside the " +
                                     std::to_string(fullNames.size()) + " trainable parameters");
    }
    byName[fullNames[e.index]] = &e;
  }
  std::map<std::string, const ShardParameter*> shardByName;
  for (const auto& s : shards) shardByName[s.param.name] = &s;
  const auto shardGroups = step::groupParameters(named(shards), weightDecay);
  const int64_t rank = model.shardGroup().rank();

  step::OptimizerStateDict out;
  int64_t index = 0;
  for (size_t gi = 0; gi < shardGroups.size(); ++gi) {
    step::AdamWGroupStateDict gs = hyperparameters(full.paramGroups[gi]);
    for (const auto& name : shardGroups[gi].names) {
      gs.params.push_back(index);
      gs.paramNames.push_back(name);
      const FlatParameter& f = *shardByName.at(name)->flat;
      torch::Tensor m, v;
      std::optional<float> step;
      std::string with, without;
      for (size_t k = 0; k < f.members().size(); ++k) {
        const auto& member = f.members()[k];
        auto it = byName.find(member.name);
        if (it == byName.end()) {
          without = member.name;
          continue;
        }
        const auto& e = *it->second;
        if (e.expAvg.numel() != member.param.numel() || e.expAvgSq.numel() != member.param.numel()) {
          return Status::invalidArgument("optimizer state of " + member.name + ": " +
                                         std::to_string(e.expAvg.numel()) + " elements, the parameter has " +
                                         std::to_string(member.param.numel()));
        }
        const float s = e.step.item<float>();
        if (step && *step != s) {
          return Status::invalidArgument("optimizer state: " + with + " and " + member.name +
                                         " took different numbers of steps (" + std::to_string(*step) + ", " +
                                         std::to_string(s) + "); FSDP steps them as one flat parameter");
        }
        step = s;
        with = member.name;
        if (!m.defined()) {
          m = torch::zeros({f.paddedNumel()}, e.expAvg.options());
          v = torch::zeros({f.paddedNumel()}, e.expAvgSq.options());
        }
        m.narrow(0, f.offsetOf(k), member.param.numel()).copy_(e.expAvg.reshape({-1}));
        v.narrow(0, f.offsetOf(k), member.param.numel()).copy_(e.expAvgSq.reshape({-1}));
      }
      if (step && !without.empty()) {
        return Status::invalidArgument("optimizer state has " + with + " but not " + without +
                                       "; FSDP steps them as one flat parameter");
      }
      if (step) {
        // Where the shard lives (host memory under NOTE [CPU offload]), as the optimizer steps it there.
        const auto slice = [&](const torch::Tensor& t) {
          return t.narrow(0, rank * f.shardNumel(), f.shardNumel())
              .to(f.shardDevice(), t.scalar_type(), /*non_blocking=*/false, /*copy=*/true);
        };
        out.state.push_back({index, name, torch::tensor(*step, torch::kFloat32), slice(m), slice(v)});
      }
      ++index;
    }
    out.paramGroups.push_back(std::move(gs));
  }
  return out;
}

step::OptimizerStateDict toFullState(const step::OptimizerStateDict& shardState,
                                     const std::vector<step::NamedParameter>& fullParams,
                                     const std::vector<ShardParameter>& shards, ShardedModel& model,
                                     double weightDecay) {
  torch::NoGradGuard noGrad;
  const auto shardNames = indexNames(step::groupParameters(named(shards), weightDecay));
  std::map<std::string, const step::AdamWParamStateDict*> byShard;
  for (const auto& e : shardState.state) byShard[shardNames.at(e.index)] = &e;
  distributed::Communicator& group = model.shardGroup();

  struct Moments {
    torch::Tensor step, m, v;
  };
  std::map<std::string, Moments> members;
  // Every rank of the shard group has state for the same shards (they step the same flats), so the
  // gathers line up.
  for (const auto& s : shards) {
    auto it = byShard.find(s.param.name);
    if (it == byShard.end()) continue;
    const auto& e = *it->second;
    const FlatParameter& f = *s.flat;
    auto gather = [&](const torch::Tensor& shard, const char* what) {
      if (group.size() == 1) return shard.detach();
      // On the device the collectives run on (offloaded state is in host memory: NOTE [CPU offload]).
      torch::Tensor in = shard.detach().contiguous();
      if (in.device() != model.computeDevice()) in = in.to(model.computeDevice());
      torch::Tensor all = torch::empty({f.paddedNumel()}, in.options());
      group.allGather(all, in, std::string(what) + " " + s.param.name);
      return all;
    };
    const torch::Tensor m = gather(e.expAvg, "optimizer exp_avg");
    const torch::Tensor v = gather(e.expAvgSq, "optimizer exp_avg_sq");
    for (size_t k = 0; k < f.members().size(); ++k) {
      const auto& p = f.members()[k].param;
      members[f.members()[k].name] = {e.step.clone(),
                                      m.narrow(0, f.offsetOf(k), p.numel()).view(p.sizes()).clone(),
                                      v.narrow(0, f.offsetOf(k), p.numel()).view(p.sizes()).clone()};
    }
  }
  const auto fullGroups = step::groupParameters(fullParams, weightDecay);
  step::OptimizerStateDict out;
  int64_t index = 0;
  for (size_t gi = 0; gi < fullGroups.size(); ++gi) {
    step::AdamWGroupStateDict gs = hyperparameters(shardState.paramGroups.at(gi));
    for (const auto& name : fullGroups[gi].names) {
      gs.params.push_back(index);
      gs.paramNames.push_back(name);
      auto it = members.find(name);
      if (it != members.end())
        out.state.push_back({index, name, it->second.step, it->second.m, it->second.v});
      ++index;
    }
    out.paramGroups.push_back(std::move(gs));
  }
  return out;
}

}  // namespace fs::fsdp
