// The cluster a run is fitted to (`flamingo-train plan --fit`, the planner's
// Fit to cluster): nodes, GPUs, memory, bandwidth and peak FLOP/s, from a
// small catalog of common GPUs with every field overridable.
//
// NOTE [Cluster figures]: bandwidths are GB/s (1e9 bytes) per GPU and per
// direction, what a ring collective's every step moves at: `intraNodeGBs`
// over NVLink (or PCIe where a GPU has none), `interNodeGBs` each GPU's share
// of its node's network, `hostGBs` its PCIe link to host memory (cpu_offload).
// Peak FLOP/s are dense (no structured sparsity): `peakTflopsFp32` the
// CUDA-core FP32 figure (PyTorch leaves TF32 off for matmuls), `peakTflops16`
// the BF16 / FP16 tensor-core figure. Memory is bytes. The catalog's figures
// and their sources are in gpuCatalog() (cluster.cpp), one line each; the
// network and host figures are the vendor's reference system's (DGX), or
// marked "assumed" where there is none.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/protocol/status.h"

namespace fs::fsdp_plan {

struct GpuSpec {
  std::string name;  // catalog key, e.g. "H100-SXM-80GB"
  int64_t memoryBytes = 0;
  double peakTflopsFp32 = 0;
  double peakTflops16 = 0;
  double intraNodeGBs = 0;
  double interNodeGBs = 0;
  double hostGBs = 0;
  int64_t hostMemoryBytes = 0;  // per node
  int64_t gpusPerNode = 0;
  std::string source;  // where the figures come from
};

struct Cluster {
  std::string gpu;  // catalog name it started from, "" = every field given
  int64_t nodes = 1;
  int64_t gpusPerNode = 1;
  int64_t memoryPerGpu = 0;       // bytes
  int64_t hostMemoryPerNode = 0;  // bytes
  double intraNodeGBs = 0;
  double interNodeGBs = 0;
  double hostGBs = 0;
  double peakTflopsFp32 = 0;
  double peakTflops16 = 0;
  double efficiency = 0.4;  // the share of peak FLOP/s the compute reaches (model FLOPs utilisation)
  int64_t world() const { return nodes * gpusPerNode; }
};

const std::vector<GpuSpec>& gpuCatalog();
// The catalog entry (case-insensitive); unknown -> InvalidArgument naming `field` and the known names.
protocol::StatusOr<GpuSpec> gpuByName(const std::string& name, const std::string& field);
// A one-node cluster of `gpu`'s reference system.
Cluster clusterFromGpu(const GpuSpec& gpu);

// One override "field=value": nodes, gpus_per_node, memory_gib, host_memory_gib, intra_node_gbs,
// inter_node_gbs, host_gbs, peak_tflops_fp32, peak_tflops_16, efficiency. Errors name the field and value.
protocol::Status setClusterField(Cluster* cluster, const std::string& field, const std::string& value);
const std::vector<std::string>& clusterFieldNames();

// Every field in range: nodes, GPUs per node and memory >= 1, bandwidths and FLOP/s > 0 (inter-node
// only with several nodes), 0 < efficiency <= 1. The error names the field and its value.
protocol::Status checkCluster(const Cluster& cluster);

}  // namespace fs::fsdp_plan
