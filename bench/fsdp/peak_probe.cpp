// fsdp_peak_probe: one rank of `flamingo-train train` that also writes, after
// every optimizer step, what the CPU memory tracker saw during that step.
//
// NOTE [Measured peak per rank] (what the planner's `peak` is held to on CPU):
// the highest number of bytes of live tracked CPU tensor storage on the rank
// between the end of one optimizer step and the end of the next, i.e. the
// tracker's `total.peak` (backend/telemetry/memory_tracker.h) with
// resetMemoryPeaks() called at every step's end. It counts every storage the
// CPU allocator hands out on any thread after the tracker is installed (model
// state, gathered buffers, activations, gradients, communication and optimizer
// temporaries, the data source's batches), exactly, and nothing else (no
// allocator overhead, no library code or Gloo buffers: RSS covers those, too
// coarsely for the tiny preset, whose model state is ~1 MB beside ~300 MB of
// resident LibTorch). The `memory` event does not carry this figure: its
// `activations` etc. are per-phase peaks since the process started (the
// trainer never resets them) and its `peak_bytes` is VmHWM, so this probe
// reads the tracker itself from TrainerOptions::onProgress. The first step's
// interval also holds the set-up (the model built before sharding) and the
// first window's gradient-flow check, which keeps every unit's full gradient
// until the end of backward, so readers skip step 1.
//
// Usage (one process per rank, torchrun's variables as `flamingo-train train`):
//   fsdp_peak_probe --config FILE --run-dir DIR --out FILE [--full-batches] [--live-at-peak FILE]
//                   [--set KEY=VALUE]...
// writes one JSON line per step to FILE:
//   {"rank":0,"step":3,"peak":...,"live":...,"phases":{"parameters":[live,peak,at_peak],...}}
// (per phase: live at the step's end, its own peak, its live bytes when the total peaked).
// --full-batches trains on the planner's worst case (NOTE [Full batches] in full_batches.h;
// data.source must be synthetic). --live-at-peak also writes, per step, the storages live at the step's peak
// by phase and operator (NOTE [Live at peak] in live_at_peak.h; slow, for finding a missing term).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "backend/cli/config_input.h"
#include "backend/data/synthetic_source.h"
#include "backend/launch/world_env.h"
#include "backend/protocol/config/validate.h"
#include "backend/telemetry/memory_tracker.h"
#include "backend/trainer/trainer.h"
#include "bench/fsdp/full_batches.h"
#include "bench/fsdp/live_at_peak.h"

namespace {

int usage(const char* why) {
  std::cerr << "fsdp_peak_probe: " << why
            << "\nusage: fsdp_peak_probe --config FILE --run-dir DIR --out FILE [--full-batches] "
               "[--live-at-peak FILE] [--set KEY=VALUE]...\n";
  return 2;
}

std::string stepLine(int64_t rank, int64_t step, const fs::telemetry::MemorySnapshot& s) {
  std::string line = "{\"rank\":" + std::to_string(rank) + ",\"step\":" + std::to_string(step) +
                     ",\"peak\":" + std::to_string(s.total.peak) +
                     ",\"live\":" + std::to_string(s.total.live) + ",\"phases\":{";
  for (size_t i = 0; i < fs::telemetry::kPhaseCount; ++i) {
    const auto p = static_cast<fs::telemetry::Phase>(i);
    line += (i ? ",\"" : "\"") + std::string(fs::telemetry::phaseName(p)) + "\":[" +
            std::to_string(s[p].live) + "," + std::to_string(s[p].peak) + "," + std::to_string(s.atPeak[i]) +
            "]";
  }
  return line + "}}";
}

}  // namespace

int main(int argc, char** argv) {
  std::string config, runDir, out, liveAtPeak;
  std::vector<std::string> sets;
  bool full = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--full-batches") {
      full = true;
      continue;
    }
    if (i + 1 >= argc) return usage(("missing value after " + a).c_str());
    const std::string v = argv[++i];
    if (a == "--config") {
      config = v;
    } else if (a == "--run-dir") {
      runDir = v;
    } else if (a == "--out") {
      out = v;
    } else if (a == "--live-at-peak") {
      liveAtPeak = v;
    } else if (a == "--set") {
      sets.push_back(v);
    } else {
      return usage(("unknown argument " + a).c_str());
    }
  }
  if (config.empty() || runDir.empty() || out.empty())
    return usage("--config, --run-dir and --out are required");
  fs::cli::Io io{std::cout, std::cerr, std::cin};
  auto cfg = fs::cli::loadRunConfig(config, sets, io);
  if (!cfg) return 1;
  const auto problems = fs::protocol::validateConfig(*cfg);
  fs::cli::printProblems("config", problems, std::cerr);
  if (fs::protocol::hasErrors(problems)) return 1;
  auto world = fs::launch::discoverWorld(fs::launch::currentEnvironment());
  if (!world) {
    std::cerr << "fsdp_peak_probe: " << world.status().message() << "\n";
    return 1;
  }
  std::ofstream lines(out);
  if (!lines) return usage(("cannot write " + out).c_str());

  fs::trainer::TrainerOptions options;
  options.rank = world->rank;
  options.world = world->worldSize;
  options.localWorld = world->localWorldSize;
  options.masterAddr = world->masterAddr;
  options.masterPort = world->masterPort;
  options.host = world->host;
  if (full) {
    if (cfg->data.source != "synthetic") return usage("--full-batches needs data.source=synthetic");
    options.makeSource = [&]() -> fs::protocol::StatusOr<std::unique_ptr<fs::data::DataSource>> {
      auto source = fs::data::SyntheticSource::create(*cfg, options.rank, options.world);
      if (!source) return source.status();
      return fs::bench::fullBatches(std::move(source.value()), cfg->model.tokens, cfg->model.lm.width);
    };
  }
  std::ofstream live;
  if (!liveAtPeak.empty()) {
    live.open(liveAtPeak);
    if (!live) return usage(("cannot write " + liveAtPeak).c_str());
    // After the tracker is installed and before the model is sharded.
    options.initModel = [](fs::model::FlamingoImpl&) {
      fs::bench::installLiveAtPeak();
      return fs::protocol::Status::ok();
    };
  }
  // NOTE [Measured peak per rank]: read, then start the next step's interval.
  options.onProgress = [&](const fs::trainer::Progress& p) {
    lines << stepLine(options.rank, p.step, fs::telemetry::memorySnapshot()) << "\n" << std::flush;
    if (live.is_open()) live << "step " << p.step << ": " << fs::bench::endLiveAtPeakStep() << std::flush;
    fs::telemetry::resetMemoryPeaks();
  };
  auto outcome = fs::trainer::runTraining(*cfg, runDir, options);
  if (!outcome) {
    std::cerr << "fsdp_peak_probe: " << outcome.status().message() << "\n";
    return 1;
  }
  return outcome.value() == fs::trainer::TrainOutcome::kKilled ? 1 : 0;
}
