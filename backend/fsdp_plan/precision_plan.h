// Which dtype each kind of FSDP memory uses, from optim.precision and
// parallel.mixed_precision, for our engine and for the reference's FSDP1.
//
// NOTE [Planner dtypes]:
//   weight   optim.precision's weight dtype: fp32 for fp32 / amp_bf16 /
//            amp_fp16, bf16 for bf16, fp16 for fp16. Trainable parameters
//            are stored in it (the optimizer's master copy), their sharded
//            gradients too, and the two AdamW states.
//   compute  what the forward computes in: bf16 under bf16 / amp_bf16, fp16
//            under fp16 / amp_fp16, else fp32.
//   param    parallel.mixed_precision.param_dtype; auto = compute. Units
//            are all-gathered in it (FSDP2-style: cast the shard, gather the
//            cast), so a gathered unit costs padded x param bytes.
//   reduce   parallel.mixed_precision.reduce_dtype; auto = compute (the
//            reference reduces in bf16 under amp_bf16).
//   frozen   ours: frozen parameters are stored in the param dtype. They are
//            never updated, so a float32 master copy would only be read to
//            be cast to what the forward uses anyway; this is where most of
//            the model-state saving against the reference comes from
//            (9B: 6.7 B frozen elements at 2 instead of 4 bytes).
// The reference (FSDP1 as OpenFlamingo configures it) keeps every flat
// parameter in the weight dtype and gathers it in that dtype too
// (MixedPrecision(param_dtype=float32, reduce_dtype=bf16) under amp_bf16).
// Buffers: the model has none (param_inventory.h), buffer_dtype is unused.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "backend/protocol/config/config_types.h"
#include "backend/protocol/status.h"
#include "backend/tensorfile/dtype.h"

namespace fs::fsdp_plan {

// The project's one element-type enum; the planner uses float32, bfloat16 and float16.
using Dtype = tensorfile::DType;

int64_t dtypeBytes(Dtype dtype);
// "float32", "bfloat16", "float16" (the telemetry spelling: torch's name without "torch.").
std::string dtypeName(Dtype dtype);

struct PrecisionPlan {
  Dtype weight = Dtype::kFloat32;   // trainable storage, sharded gradients, AdamW states
  Dtype compute = Dtype::kFloat32;  // activations
  Dtype param = Dtype::kFloat32;    // gathered units
  Dtype reduce = Dtype::kFloat32;   // gradient reduce-scatter
  Dtype frozen = Dtype::kFloat32;   // frozen storage
};

// Ours. An unknown optim.precision or mixed-precision dtype is InvalidArgument naming the field.
protocol::StatusOr<PrecisionPlan> oursPrecision(const protocol::RunConfig& config);
// The reference's FSDP1: everything stored and gathered in the weight dtype.
PrecisionPlan referencePrecision(const PrecisionPlan& ours);
// Ours without FSDP (strategies single and ddp): the model as built, every
// parameter (frozen too) in the weight dtype, gradients all-reduced in it;
// parallel.mixed_precision has no effect (protocol/validate.cpp warns).
PrecisionPlan replicatedPrecisionOf(const PrecisionPlan& ours);

}  // namespace fs::fsdp_plan
