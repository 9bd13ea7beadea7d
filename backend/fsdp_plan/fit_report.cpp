#include "backend/fsdp_plan/fit_report.h"

#include <cstdio>
#include <sstream>

#include "backend/fsdp_plan/plan_report.h"

namespace fs::fsdp_plan {
namespace {

std::string fixed(double v, const char* format = "%.4g") {
  char buf[48];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

nlohmann::json choiceJson(const FitChoice& c, const protocol::RunConfig& config, const Cluster& cluster) {
  nlohmann::json j;
  j["strategy"] = c.strategy;
  j["wrap_policy"] = c.policy;
  j["micro_batch"] = c.microBatch;
  j["grad_accum_steps"] = c.accumulation;
  j["gradient_checkpointing"] = c.checkpointing;
  j["precision"] = c.precision;
  j["cpu_offload"] = c.cpuOffload;
  j["device_bytes"] = c.deviceBytes;
  j["host_bytes"] = c.hostBytes;
  j["margin_bytes"] = c.margin;
  j["step_s"] = c.time.totalS();
  j["compute_s"] = c.time.computeS;
  j["recompute_s"] = c.time.recomputeS;
  j["comm_s"] = c.time.commS;
  j["exposed_comm_s"] = c.time.exposedCommS;
  j["offload_s"] = c.time.offloadS;
  j["comm_bytes"] = c.time.commBytes;
  j["flops"] = c.time.flops.forward + c.time.flops.backward + c.time.flops.recompute;
  j["reason"] = c.reason;
  j["exceeds"] = c.exceeds;
  j["set"] = c.assignments(config, cluster);
  return j;
}

}  // namespace

std::string formatFit(const FitResult& fit, size_t top) {
  const Cluster& c = fit.cluster;
  std::ostringstream out;
  out << "Cluster: " << c.nodes << " node(s) x " << c.gpusPerNode << " GPU(s)"
      << (c.gpu.empty() ? "" : " " + c.gpu) << ", " << formatBytes(c.memoryPerGpu) << " per GPU, "
      << formatBytes(c.hostMemoryPerNode) << " host per node; " << fixed(c.intraNodeGBs)
      << " GB/s in a node, " << fixed(c.interNodeGBs) << " GB/s between nodes, " << fixed(c.hostGBs)
      << " GB/s to host; peak " << fixed(c.peakTflopsFp32) << " / " << fixed(c.peakTflops16)
      << " TFLOP/s (fp32 / 16-bit) at " << fixed(c.efficiency * 100, "%.0f") << " % efficiency\n";
  out << "\nFits (" << fit.ranked.size() << "), fastest first:\n";
  for (size_t i = 0; i < fit.ranked.size() && i < top; ++i) {
    const auto& x = fit.ranked[i];
    out << "  " << i + 1 << ". " << x.label() << "  step " << fixed(x.time.totalS()) << " s, needs "
        << formatBytes(x.deviceBytes) << "\n     " << x.reason << "\n";
  }
  if (fit.ranked.size() > top) out << "  ... " << fit.ranked.size() - top << " more\n";
  out << "\nDo not fit (" << fit.misfits.size() << "), least over first:\n";
  for (size_t i = 0; i < fit.misfits.size() && i < top; ++i) {
    const auto& x = fit.misfits[i];
    out << "  - " << x.label() << ": " << x.reason << "\n";
  }
  if (fit.misfits.size() > top) out << "  ... " << fit.misfits.size() - top << " more\n";
  for (const auto& n : fit.notes) out << "\nNote: " << n << "\n";
  return out.str();
}

nlohmann::json fitToJson(const FitResult& fit, const protocol::RunConfig& config) {
  const Cluster& c = fit.cluster;
  nlohmann::json j;
  j["schema"] = kFitJsonSchema;
  j["cluster"] = {{"gpu", c.gpu},
                  {"nodes", c.nodes},
                  {"gpus_per_node", c.gpusPerNode},
                  {"memory_per_gpu", c.memoryPerGpu},
                  {"host_memory_per_node", c.hostMemoryPerNode},
                  {"intra_node_gbs", c.intraNodeGBs},
                  {"inter_node_gbs", c.interNodeGBs},
                  {"host_gbs", c.hostGBs},
                  {"peak_tflops_fp32", c.peakTflopsFp32},
                  {"peak_tflops_16", c.peakTflops16},
                  {"efficiency", c.efficiency}};
  j["ranked"] = nlohmann::json::array();
  for (const auto& x : fit.ranked) j["ranked"].push_back(choiceJson(x, config, c));
  j["misfits"] = nlohmann::json::array();
  for (const auto& x : fit.misfits) j["misfits"].push_back(choiceJson(x, config, c));
  j["notes"] = fit.notes;
  return j;
}

}  // namespace fs::fsdp_plan
