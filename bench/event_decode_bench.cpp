// Decode throughput of events.jsonl: N realistic step events (two datasets,
// per-rank losses, 24 gate pairs) encoded once, then decoded in 64 KiB
// chunks as a follower reads them. Prints lines/s and MB/s, median of runs.
//
//   build/bin/bench_event_decode [events=200000] [runs=5]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "backend/protocol/wire/event_codec.h"

using namespace fs::protocol;

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 200000;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 5;
  EventEncoder encoder(0, [] { return int64_t{1'700'000'000'000}; });
  std::string data;
  for (long i = 0; i < n; ++i) {
    StepEvent s;
    s.step = i + 1;
    s.samples = {{"laion", 64 * (i + 1)}, {"mmc4", 32 * (i + 1)}};
    s.loss = {{"laion", 3.0 + 1e-6 * i}, {"mmc4", 2.5 - 1e-6 * i}};
    s.rank_loss = {{"laion", {3.0, 3.1}}, {"mmc4", {2.4, 2.6}}};
    s.lr = 1e-4;
    s.grad_norm = 0.5;
    s.step_time_s = 0.25;
    s.data_time_s = 0.01;
    s.samples_per_s = {{"laion", 256.0}, {"mmc4", 128.0}};
    for (int l = 0; l < 24; ++l) s.gates.push_back({l, 0.01 * l, -0.02 * l});
    data += encoder.encode(s);
  }
  std::vector<double> seconds;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    EventDecoder decoder;
    size_t events = 0;
    for (size_t off = 0; off < data.size(); off += 65536) {
      for (const auto& line : decoder.feed(std::string_view(data).substr(off, 65536))) {
        events += line.kind == DecodedLine::Kind::kEvent ? 1 : 0;
      }
    }
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (events != static_cast<size_t>(n)) {
      std::fprintf(stderr, "decoded %zu of %ld events\n", events, n);
      return 1;
    }
  }
  std::sort(seconds.begin(), seconds.end());
  const double med = seconds[seconds.size() / 2];
  std::printf("event_decode: %ld step events, %.1f MB, %d runs\n", n, data.size() / 1e6, runs);
  std::printf("  median %.3f s  (min %.3f, max %.3f)  ->  %.0f events/s, %.1f MB/s\n", med, seconds.front(),
              seconds.back(), n / med, data.size() / 1e6 / med);
  return 0;
}
