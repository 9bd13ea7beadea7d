// Ranks as threads of the test process over real Gloo on loopback: each
// thread joins the run (TCPStore + pre-flight) and runs `body` with its
// world communicator. Returns each rank's exception message ("" if none).
#pragma once

#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "backend/distributed/rendezvous.h"
#include "tests/backend/distributed/rank_processes.h"

namespace fs::testing {

// NOTE [Flight recorder and thread ranks]: LibTorch 2.11's c10d FlightRecorder
// (one per process, on by default with 2000 entries) races when threads of one
// process act as ranks and enqueue Gloo collectives at once: a segfault in
// recordWithResetEnabled under ProcessGroupGloo::enqueue (gdb), once in 10-65
// runs of store_test's Gloo case on a loaded machine (500 runs on a quieter
// one did not show it). The engine's ranks are processes, so only
// these tests meet it. TORCH_FR_BUFFER_SIZE=0, set before the first process
// group is made (the recorder reads it once), turns the recorder off here.
inline void flightRecorderOffForThreadRanks() {
  ::setenv("TORCH_FR_BUFFER_SIZE", "0", /*overwrite=*/0);
}

inline std::vector<std::string> runThreadRanks(int world,
                                               const std::function<void(distributed::Communicator&)>& body) {
  flightRecorderOffForThreadRanks();
  const int port = freePort();
  std::vector<std::string> errors(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      try {
        distributed::RendezvousOptions o;
        o.rank = r;
        o.world = world;
        o.localWorld = world;
        o.masterPort = port;
        o.identity = "thread ranks";
        o.preflightTimeout = std::chrono::seconds(60);
        o.collectiveTimeout = std::chrono::seconds(60);
        auto joined = distributed::joinRun(o);
        if (!joined) throw std::runtime_error(joined.status().message());
        auto membership = std::move(joined.value());
        body(membership->host());  // Gloo: one group is host and device group
        membership->host().barrier("test end");
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

}  // namespace fs::testing
