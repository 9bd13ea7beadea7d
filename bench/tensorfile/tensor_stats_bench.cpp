// bench_tensor_stats: open a torch.save file and compute min/max/mean/std/norm,
// zero/NaN/Inf counts and a histogram over all its tensors (fs::tensorfile,
// one thread), several times; prints the median time and GB/s of tensor bytes.
//
// Usage: bench_tensor_stats FILE [runs=5] [bins=100] [--range LO HI]
// Without --range the data is read twice (moments, then the histogram over
// [min, max]); the GB/s are tensor bytes / total time, both passes included.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "backend/tensorfile/state_dict.h"
#include "backend/tensorfile/tensor_stats.h"
#include "backend/tensorfile/torch_file.h"

namespace tf = fs::tensorfile;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE [runs] [bins] [--range LO HI]\n", argv[0]);
    return 2;
  }
  const std::string path = argv[1];
  const int runs = argc > 2 ? std::atoi(argv[2]) : 5;
  tf::StatsOptions options;
  options.bins = argc > 3 ? std::atoi(argv[3]) : 100;
  if (argc > 6 && std::string(argv[4]) == "--range") options.range = {std::atof(argv[5]), std::atof(argv[6])};

  std::vector<double> seconds;
  std::uint64_t bytes = 0;
  tf::TensorStats last;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    auto file = tf::openTorchFile(path);
    if (!file) return std::fprintf(stderr, "%s\n", file.status().toString().c_str()), 1;
    auto tensors = tf::flattenTensors(file->root());
    if (!tensors) return std::fprintf(stderr, "%s\n", tensors.status().toString().c_str()), 1;
    std::vector<tf::TensorView> views;
    bytes = 0;
    for (const auto& t : *tensors) {
      auto v = file->view(*t.tensor);
      if (!v) return std::fprintf(stderr, "%s\n", v.status().toString().c_str()), 1;
      bytes += static_cast<std::uint64_t>(v->numel()) * tf::itemSize(v->dtype);
      views.push_back(*v);
    }
    auto stats = tf::computeStats(views, options);
    if (!stats) return std::fprintf(stderr, "%s\n", stats.status().toString().c_str()), 1;
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    last = std::move(*stats);
  }
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds[seconds.size() / 2];
  const auto& m = last.moments;
  std::printf("ours: %.3f GiB, %d runs, median %.3f s (min %.3f), %.2f GB/s (%s)\n",
              static_cast<double>(bytes) / (1 << 30), runs, median, seconds.front(),
              static_cast<double>(bytes) / median / 1e9,
              options.range ? "one pass, range given" : "two passes");
  std::printf("ours: min %s max %s mean %.9g std %.9g norm %.9g zeros %llu nan %llu inf %llu hist[0] %llu\n",
              m.min ? m.min->toString().c_str() : "-", m.max ? m.max->toString().c_str() : "-", m.meanOrNaN(),
              m.stddev(), m.l2Norm(), static_cast<unsigned long long>(m.zeros),
              static_cast<unsigned long long>(m.nans), static_cast<unsigned long long>(m.posInfs + m.negInfs),
              static_cast<unsigned long long>(last.histogram ? last.histogram->counts[0] : 0));
  std::printf("ours_median_s=%.6f\n", median);
  return 0;
}
