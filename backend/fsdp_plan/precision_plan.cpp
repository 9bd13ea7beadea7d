#include "backend/fsdp_plan/precision_plan.h"

namespace fs::fsdp_plan {
namespace {

using protocol::Status;

protocol::StatusOr<Dtype> mixedDtype(const std::string& value, Dtype fallback, const std::string& field) {
  if (value == "auto" || value.empty()) return fallback;
  if (value == "fp32") return Dtype::kFloat32;
  if (value == "bf16") return Dtype::kBFloat16;
  if (value == "fp16") return Dtype::kFloat16;
  return Status::invalidArgument(field + ": unknown dtype '" + value + "' (known: auto, fp32, bf16, fp16)");
}

}  // namespace

int64_t dtypeBytes(Dtype dtype) {
  return static_cast<int64_t>(tensorfile::itemSize(dtype));
}

std::string dtypeName(Dtype dtype) {
  std::string_view name = tensorfile::torchName(dtype);
  if (name.substr(0, 6) == "torch.") name.remove_prefix(6);
  return std::string(name);
}

protocol::StatusOr<PrecisionPlan> oursPrecision(const protocol::RunConfig& config) {
  const auto& p = config.optim.precision;
  PrecisionPlan plan;
  if (p == "fp32") {
    plan.weight = plan.compute = Dtype::kFloat32;
  } else if (p == "bf16") {
    plan.weight = plan.compute = Dtype::kBFloat16;
  } else if (p == "fp16") {
    plan.weight = plan.compute = Dtype::kFloat16;
  } else if (p == "amp_bf16") {
    plan.weight = Dtype::kFloat32;
    plan.compute = Dtype::kBFloat16;
  } else if (p == "amp_fp16") {
    plan.weight = Dtype::kFloat32;
    plan.compute = Dtype::kFloat16;
  } else {
    return Status::invalidArgument("optim.precision: unknown precision '" + p +
                                   "' (known: fp32, bf16, fp16, amp_bf16, amp_fp16)");
  }
  const auto& mp = config.parallel.mixed_precision;
  auto param = mixedDtype(mp.param_dtype, plan.compute, "parallel.mixed_precision.param_dtype");
  if (!param) return param.status();
  auto reduce = mixedDtype(mp.reduce_dtype, plan.compute, "parallel.mixed_precision.reduce_dtype");
  if (!reduce) return reduce.status();
  auto buffer = mixedDtype(mp.buffer_dtype, plan.compute, "parallel.mixed_precision.buffer_dtype");
  if (!buffer) return buffer.status();
  if (*param != plan.compute && *param != plan.weight) {
    // The forward computes with the gathered parameters (protocol/validate.cpp says the same).
    return Status::invalidArgument("parallel.mixed_precision.param_dtype: '" + mp.param_dtype +
                                   "' is neither what optim.precision '" + p + "' computes in (" +
                                   dtypeName(plan.compute) + ") nor its weights' dtype (" +
                                   dtypeName(plan.weight) + ")");
  }
  plan.param = *param;
  plan.reduce = *reduce;
  plan.frozen = *param;  // NOTE [Planner dtypes]
  return plan;
}

PrecisionPlan referencePrecision(const PrecisionPlan& ours) {
  PrecisionPlan ref = ours;
  ref.param = ours.weight;
  ref.frozen = ours.weight;
  return ref;
}

PrecisionPlan replicatedPrecisionOf(const PrecisionPlan& ours) {
  PrecisionPlan r = ours;
  r.param = r.frozen = r.reduce = ours.weight;
  return r;
}

}  // namespace fs::fsdp_plan
