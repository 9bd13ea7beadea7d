#include "backend/fsdp_plan/cluster.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <sstream>

namespace fs::fsdp_plan {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;
constexpr int64_t kGB = 1000LL * 1000 * 1000;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string figure(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

}  // namespace

const std::vector<GpuSpec>& gpuCatalog() {
  // name, memory, FP32, BF16/FP16 dense, NVLink (or PCIe) per direction, network per GPU, PCIe per
  // direction, host memory per node, GPUs per node, source.
  static const std::vector<GpuSpec> catalog = {
      {"A100-SXM-40GB", 40 * kGiB, 19.5, 312, 300, 25, 32, 1000 * kGB, 8,
       "NVIDIA A100 Tensor Core GPU datasheet (NVLink 600 GB/s both ways, PCIe Gen4 64 GB/s); network "
       "and host memory: NVIDIA DGX A100 datasheet (8x 200 Gb/s HDR, 1 TB)"},
      {"A100-SXM-80GB", 80 * kGiB, 19.5, 312, 300, 25, 32, 2000 * kGB, 8,
       "NVIDIA A100 Tensor Core GPU datasheet; NVIDIA DGX A100 datasheet (640 GB system: 8x 200 Gb/s "
       "HDR, 2 TB)"},
      {"H100-SXM-80GB", 80 * kGiB, 67, 989.4, 450, 50, 64, 2000 * kGB, 8,
       "NVIDIA H100 Tensor Core GPU datasheet (SXM5: NVLink 900 GB/s both ways, PCIe Gen5 128 GB/s, "
       "BF16 1979 TFLOPS with sparsity); NVIDIA DGX H100 datasheet (8x 400 Gb/s NDR, 2 TB)"},
      {"H200-SXM-141GB", 141 * kGB, 67, 989.4, 450, 50, 64, 2000 * kGB, 8,
       "NVIDIA H200 Tensor Core GPU datasheet (SXM: 141 GB HBM3e, NVLink 900 GB/s both ways, PCIe "
       "Gen5 128 GB/s); NVIDIA DGX H200 datasheet (8x 400 Gb/s NDR, 2 TB)"},
      {"L40S-48GB", 48 * kGiB, 91.6, 362.05, 32, 12.5, 32, 512 * kGiB, 8,
       "NVIDIA L40S datasheet (no NVLink: PCIe Gen4 x16 64 GB/s both ways; BF16 733 TFLOPS with "
       "sparsity); network 100 Gb/s per GPU and 512 GiB host memory assumed"},
      {"RTX4090-24GB", 24 * kGiB, 82.6, 165.2, 32, 12.5, 32, 256 * kGiB, 4,
       "NVIDIA Ada GPU architecture whitepaper (GeForce RTX 4090: BF16 330 TFLOPS with sparsity, "
       "PCIe Gen4 x16, no NVLink); network 100 Gb/s per GPU, 4 GPUs and 256 GiB per node assumed"},
  };
  return catalog;
}

protocol::StatusOr<GpuSpec> gpuByName(const std::string& name, const std::string& field) {
  std::string known;
  for (const auto& g : gpuCatalog()) {
    if (lower(g.name) == lower(name)) return g;
    known += (known.empty() ? "" : ", ") + g.name;
  }
  return protocol::Status::invalidArgument(field + ": unknown GPU '" + name + "' (the catalog has " + known +
                                           "; or give every cluster figure without --gpu)");
}

Cluster clusterFromGpu(const GpuSpec& gpu) {
  Cluster c;
  c.gpu = gpu.name;
  c.nodes = 1;
  c.gpusPerNode = gpu.gpusPerNode;
  c.memoryPerGpu = gpu.memoryBytes;
  c.hostMemoryPerNode = gpu.hostMemoryBytes;
  c.intraNodeGBs = gpu.intraNodeGBs;
  c.interNodeGBs = gpu.interNodeGBs;
  c.hostGBs = gpu.hostGBs;
  c.peakTflopsFp32 = gpu.peakTflopsFp32;
  c.peakTflops16 = gpu.peakTflops16;
  return c;
}

const std::vector<std::string>& clusterFieldNames() {
  static const std::vector<std::string> names = {
      "nodes",          "gpus_per_node", "memory_gib",       "host_memory_gib", "intra_node_gbs",
      "inter_node_gbs", "host_gbs",      "peak_tflops_fp32", "peak_tflops_16",  "efficiency"};
  return names;
}

protocol::Status setClusterField(Cluster* c, const std::string& field, const std::string& value) {
  double v = 0;
  const char* end = value.data() + value.size();
  const auto [ptr, ec] = std::from_chars(value.data(), end, v);
  if (value.empty() || ec != std::errc() || ptr != end || !std::isfinite(v))
    return protocol::Status::invalidArgument(field + ": '" + value + "' is not a number");
  auto whole = [&](int64_t* target) {
    if (v != std::floor(v))
      return protocol::Status::invalidArgument(field + ": '" + value + "' is not a whole number");
    *target = static_cast<int64_t>(v);
    return protocol::Status::ok();
  };
  if (field == "nodes") return whole(&c->nodes);
  if (field == "gpus_per_node") return whole(&c->gpusPerNode);
  if (field == "memory_gib") {
    c->memoryPerGpu = static_cast<int64_t>(v * kGiB);
  } else if (field == "host_memory_gib") {
    c->hostMemoryPerNode = static_cast<int64_t>(v * kGiB);
  } else if (field == "intra_node_gbs") {
    c->intraNodeGBs = v;
  } else if (field == "inter_node_gbs") {
    c->interNodeGBs = v;
  } else if (field == "host_gbs") {
    c->hostGBs = v;
  } else if (field == "peak_tflops_fp32") {
    c->peakTflopsFp32 = v;
  } else if (field == "peak_tflops_16") {
    c->peakTflops16 = v;
  } else if (field == "efficiency") {
    c->efficiency = v;
  } else {
    std::string known;
    for (const auto& n : clusterFieldNames()) known += (known.empty() ? "" : ", ") + n;
    return protocol::Status::invalidArgument("unknown cluster field '" + field + "' (known: " + known + ")");
  }
  // Negative or zero figures are refused by checkCluster, naming the field.
  return protocol::Status::ok();
}

protocol::Status checkCluster(const Cluster& c) {
  auto bad = [](const std::string& field, const std::string& value, const std::string& why) {
    return protocol::Status::invalidArgument(field + ": " + value + " " + why);
  };
  if (c.nodes < 1) return bad("nodes", std::to_string(c.nodes), "must be at least 1");
  if (c.gpusPerNode < 1) return bad("gpus_per_node", std::to_string(c.gpusPerNode), "must be at least 1");
  if (c.memoryPerGpu <= 0)
    return bad("memory_gib", figure(double(c.memoryPerGpu) / kGiB), "must be above 0 (memory per GPU)");
  if (c.hostMemoryPerNode <= 0)
    return bad("host_memory_gib", figure(double(c.hostMemoryPerNode) / kGiB),
               "must be above 0 (host memory per node)");
  const std::pair<const char*, double> positive[] = {{"intra_node_gbs", c.intraNodeGBs},
                                                     {"host_gbs", c.hostGBs},
                                                     {"peak_tflops_fp32", c.peakTflopsFp32},
                                                     {"peak_tflops_16", c.peakTflops16}};
  for (const auto& [field, v] : positive) {
    if (!(v > 0)) return bad(field, figure(v), "must be above 0");
  }
  if (c.nodes > 1 && !(c.interNodeGBs > 0))
    return bad("inter_node_gbs", figure(c.interNodeGBs), "must be above 0 with more than one node");
  if (c.interNodeGBs < 0) return bad("inter_node_gbs", figure(c.interNodeGBs), "must not be negative");
  if (!(c.efficiency > 0 && c.efficiency <= 1))
    return bad("efficiency", figure(c.efficiency), "must be above 0 and at most 1 (a share of peak FLOP/s)");
  return protocol::Status::ok();
}

}  // namespace fs::fsdp_plan
