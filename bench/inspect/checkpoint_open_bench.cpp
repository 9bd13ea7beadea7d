// bench_checkpoint_open: open and index a checkpoint with fs::inspect's
// CheckpointIndex (zip directory, pickle, manifest; tensor data left mapped),
// several times; prints the median time and how much resident memory the open
// index adds (/proc/self/statm, with the index alive; the first open and the most).
//
// Usage: bench_checkpoint_open PATH [runs=5]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "backend/inspect/checkpoint_index.h"

namespace {

long long residentBytes() {
  std::ifstream statm("/proc/self/statm");
  long long size = 0, resident = 0;
  statm >> size >> resident;
  if (std::getenv("FS_BENCH_RSS_DETAIL")) {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind("Rss", 0) == 0) std::fprintf(stderr, "%s\n", line.c_str());
  }
  return resident * sysconf(_SC_PAGESIZE);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PATH [runs]\n", argv[0]);
    return 2;
  }
  const std::string path = argv[1];
  const int runs = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
  std::vector<double> seconds;
  std::vector<long long> grown;
  std::size_t tensors = 0;
  unsigned long long bytes = 0;
  for (int r = 0; r < runs; ++r) {
    const long long before = residentBytes();
    const auto t0 = std::chrono::steady_clock::now();
    auto index = fs::inspect::CheckpointIndex::open(path);
    if (!index) return std::fprintf(stderr, "%s\n", index.status().toString().c_str()), 1;
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    grown.push_back(residentBytes() - before);
    tensors = index->tensors().size();
    bytes = 0;
    for (const auto& t : index->tensors()) bytes += t.bytes;
  }
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds[seconds.size() / 2];
  std::printf(
      "ours: %zu tensors, %.3f GiB, %d runs, median %.4f s (min %.4f), RSS +%.1f MiB on the first open (max "
      "+%.1f)\n",
      tensors, static_cast<double>(bytes) / (1 << 30), runs, median, seconds.front(),
      static_cast<double>(grown.front()) / (1 << 20),
      static_cast<double>(*std::max_element(grown.begin(), grown.end())) / (1 << 20));
  std::printf("ours_median_s=%.6f\n", median);
  return 0;
}
