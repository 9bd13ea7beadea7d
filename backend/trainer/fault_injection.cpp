#include "backend/trainer/fault_injection.h"

#include <algorithm>
#include <cstdlib>

namespace fs::trainer {
namespace {

protocol::Status parse(const std::map<std::string, std::string>& env, const char* name, int64_t* rank,
                       int64_t* iteration) {
  const auto it = env.find(name);
  if (it == env.end() || it->second.empty()) return protocol::Status::ok();
  const std::string& v = it->second;
  const auto colon = v.find(':');
  char* end1 = nullptr;
  char* end2 = nullptr;
  if (colon != std::string::npos) {
    *rank = std::strtoll(v.substr(0, colon).c_str(), &end1, 10);
    *iteration = std::strtoll(v.c_str() + colon + 1, &end2, 10);
  }
  if (colon == std::string::npos || colon == 0 || *end1 != '\0' || *end2 != '\0' || colon + 1 == v.size() ||
      *rank < 0 || *iteration < 0) {
    return protocol::Status::invalidArgument(
        std::string(name) + "='" + v + "': expected <rank>:<" +
        (std::string(name).starts_with("FS_FAULT_WRITE") ? "op" : "iteration") + ">");
  }
  return protocol::Status::ok();
}

// <rank>:<iteration>:<factor>[,...]
protocol::Status parseSpikes(const std::map<std::string, std::string>& env, FaultPlan* plan) {
  const char* name = "FS_FAULT_SPIKE";
  const auto it = env.find(name);
  if (it == env.end() || it->second.empty()) return protocol::Status::ok();
  const std::string& all = it->second;
  const auto bad = [&] {
    return protocol::Status::invalidArgument(
        std::string(name) + "='" + all + "': expected <rank>:<iteration>:<factor>[,...] with factors > 0");
  };
  size_t begin = 0;
  while (begin <= all.size()) {
    const size_t comma = std::min(all.find(',', begin), all.size());
    const std::string v = all.substr(begin, comma - begin);
    begin = comma + 1;
    const auto last = v.rfind(':');
    if (last == std::string::npos || last == 0) return bad();
    FaultPlan::Spike spike;
    char* end = nullptr;
    const std::string factor = v.substr(last + 1);
    spike.factor = std::strtod(factor.c_str(), &end);
    if (factor.empty() || *end != '\0' || !(spike.factor > 0)) return bad();
    const std::map<std::string, std::string> head = {{name, v.substr(0, last)}};
    if (!parse(head, name, &spike.rank, &spike.iteration)) return bad();
    plan->spikes.push_back(spike);
  }
  return protocol::Status::ok();
}

}  // namespace

protocol::StatusOr<FaultPlan> faultPlanFromEnvironment(const std::map<std::string, std::string>& env) {
  FaultPlan plan;
  if (auto s = parse(env, "FS_FAULT_NAN_LOSS", &plan.nanRank, &plan.nanIteration); !s) return s;
  if (auto s = parse(env, "FS_FAULT_THROW", &plan.throwRank, &plan.throwIteration); !s) return s;
  if (auto s = parse(env, "FS_FAULT_WRITE_KILL", &plan.writeKillRank, &plan.writeKillOp); !s) return s;
  if (auto s = parse(env, "FS_FAULT_WRITE_FAIL", &plan.writeFailRank, &plan.writeFailOp); !s) return s;
  if (auto s = parseSpikes(env, &plan); !s) return s;
  if (auto it = env.find("FS_SKIP_BATCHES"); it != env.end() && !it->second.empty()) {
    if (!parse(env, "FS_SKIP_BATCHES", &plan.skipIteration, &plan.skipCount)) {
      return protocol::Status::invalidArgument("FS_SKIP_BATCHES='" + it->second +
                                               "': expected <iteration>:<count>");
    }
  }
  return plan;
}

}  // namespace fs::trainer
